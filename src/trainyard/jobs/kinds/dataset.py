"""Creating dataset jobs from user input: paths checked against the data roots, specs validated.

The CLI and the API both call these, so a rule about what a user may ask for lives in one place.
"""

from __future__ import annotations

from trainyard.core.paths import resolve_inside
from trainyard.core.status import Status
from trainyard.core.tasks import task_traits
from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.errors import JobConflict, JobError
from trainyard.jobs.kinds.lookup import job_of_kind
from trainyard.jobs.kinds.registry import DATASET
from trainyard.jobs.store.store import Job

PATH_FIELDS = ("train_folder", "val_folder", "test_folder", "train_list", "val_list", "test_list",
               "labels_file", "image_root", "train_archive", "val_archive", "train_labels", "val_labels",
               "test_labels", "mask_colors")


def check_paths(ctx: Context, spec: DatasetSpec) -> DatasetSpec:
    """Resolve every path of the spec and refuse any outside TRAINYARD_DATA_ROOTS.

    The roots go into the spec too (whatever the user sent), so the build also skips images that
    a list names outside them.
    """
    resolved: dict = {"data_roots": [str(r) for r in ctx.settings.allowed_roots]}
    for field in PATH_FIELDS:
        value = getattr(spec, field)
        if value:
            resolved[field] = str(resolve_inside(value, ctx.settings.allowed_roots))
    return spec.model_copy(update=resolved)


def create_dataset_job(ctx: Context, spec: DatasetSpec, *, foreground: bool = False,
                       parent: Job | None = None) -> Job:
    if parent is None and (spec.parent_dir is not None or spec.dataset_version != 1):
        # Only append sets these: a parent_dir from a user would read a folder outside the roots.
        raise JobError("parent_dir and dataset_version are set by append; to add images to a "
                       "dataset, append to it")
    spec = check_paths(ctx, spec)
    return ctx.manager.create("dataset", spec.name, spec.model_dump(mode="json"),
                              needs={"pool": "dataset"}, parent_id=parent.id if parent else None,
                              foreground=foreground)


def append_dataset_job(ctx: Context, parent_id: str, fields: dict, *, foreground: bool = False) -> Job:
    """A new version of a dataset: the parent's images plus those of ``fields``' sources.

    ``fields`` holds DatasetSpec fields (sources, split options, optionally a name); image
    geometry and encoding are the parent's, so both sets share one store. The parent stays as it is.
    """
    parent = job_of_kind(ctx.store, parent_id, "dataset")
    if parent.status != Status.DONE:
        raise JobConflict(f"dataset {parent_id} is {parent.status}; only a built dataset can be appended to")
    folder = ctx.manager.folder(parent_id)
    base = DATASET.spec_of(folder)  # the parent's spec as stored, however old; the new one is checked
    if not task_traits(base.task).appendable:
        raise JobConflict(f"dataset {parent_id} is a detection dataset: appending is for classification "
                          "datasets; build a new detection dataset from all the images and labels")
    version = base.dataset_version + 1
    inherited = {key: getattr(base, key) for key in ("width", "height", "channels", "resize", "encoding")}
    spec = DatasetSpec.model_validate({
        **fields, **inherited,
        "name": fields.get("name") or version_name(base.name, version),
        "parent_dir": str(folder.dataset), "dataset_version": version,
    })
    return create_dataset_job(ctx, spec, foreground=foreground, parent=parent)


def version_name(name: str, version: int) -> str:
    """The default name of a new version: "digits-web" -> "digits-web v2", and a name that already
    ends in a version counts on from it ("digits-web v2" -> "digits-web v3", not "... v2 v2")."""
    stem, _, last = name.rpartition(" v")
    if stem.strip() and last.isdigit():
        return f"{stem} v{int(last) + 1}"
    return f"{name} v{version}"
