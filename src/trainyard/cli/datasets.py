"""``trainyard dataset create | list | show | append | resume``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from trainyard.cli.context import cli_context, job_brief, job_detail
from trainyard.cli.known_jobs import refuse_unknown
from trainyard.cli.output import emit_json, err, run_in_foreground
from trainyard.core.errors import InvalidInput, NotFound
from trainyard.core.status import Status
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import RESIZE_MODES
from trainyard.datasets.sources import ignored_line

if TYPE_CHECKING:
    from pydantic import ValidationError

    from trainyard.datasets.spec import DatasetSpec

# The spec's pydantic models are imported by the commands that use them, the store and the job
# documents by cli/context.py's functions: `dataset --help` and `dataset create --help` load none.
app = typer.Typer(help="Build image-classification and object-detection datasets.", no_args_is_help=True,
                  rich_markup_mode=None)

Folder = Path | None


def _spec(**fields) -> DatasetSpec:
    from pydantic import ValidationError

    from trainyard.datasets.spec import DatasetSpec

    fields = {k: (str(v) if isinstance(v, Path) else v) for k, v in fields.items() if v is not None}
    try:
        return DatasetSpec.model_validate(fields)
    except ValidationError as exc:  # said in flag names, not field names
        raise InvalidInput(_errors(exc)) from None


FLAGS = {"labels_file": "--labels", "width": "--size", "height": "--size"}  # where not --field-name


def _errors(exc: ValidationError) -> str:
    """Pydantic's messages, each led by the option it is about (whole-spec rules have none)."""
    messages = []
    for e in exc.errors():
        message = e["msg"].removeprefix("Value error, ")
        if e["loc"]:
            field = str(e["loc"][0])
            message = f"{FLAGS.get(field, '--' + field.replace('_', '-'))}: {message}"
        messages.append(message)
    return "; ".join(messages)


def _run(ctx, make_job, as_json: bool, submit: bool) -> None:
    from pydantic import ValidationError

    try:
        job = make_job()
    except ValidationError as exc:  # said in flag names, not field names
        raise InvalidInput(_errors(exc)) from None
    if submit:
        err.print(f"queued dataset {job.id} ({job.name}) for the server", soft_wrap=True, markup=False)
    else:
        job = run_in_foreground(ctx, job, quiet=as_json)
    detail = job_detail(ctx.manager, job)
    if as_json:
        emit_json(detail)
    elif job.status == Status.DONE:
        _print_counts(detail.as_json())
    if job.status.is_unsuccessful:
        raise typer.Exit(1)


SPLITS = ("train", "val", "test")


def count_lines(detail: dict) -> list[str]:
    """One line per split: images and classes, and for detection the boxes of each class."""
    lines = []
    for split in SPLITS:
        counts = detail["counts"].get(split)
        if counts is None:
            continue
        if detail.get("cooccurrence") is not None:  # multi-label: counts are images that have each label
            per_label = ", ".join(f"{name} {n}" for name, n in counts.items())
            lines.append(f"{split}: {detail.get('images', {}).get(split, 0)} images; images per label: {per_label}")
            continue
        if not task_traits(detail.get("task")).boxes:
            lines.append(f"{split}: {sum(counts.values())} images in {len(counts)} classes")
            continue
        boxes = detail.get("box_counts", {}).get(split, {})
        images = detail.get("images", {}).get(split, 0)
        empty = detail.get("empty_images", {}).get(split, 0)
        per_class = ", ".join(f"{name} {boxes.get(name, 0)} in {n} images" for name, n in counts.items())
        lines.append(f"{split}: {images} images ({empty} with no box), {sum(boxes.values())} boxes: {per_class}")
    return lines


def _skipped_what(detail: dict) -> str:
    return "images, boxes or label files" if task_traits(detail.get("task")).boxes else "files"


def _print_counts(detail: dict) -> None:
    for line in count_lines(detail):
        err.print(line, markup=False, highlight=False)
    if detail["skipped"]:  # named: the files to look at, not only how many
        named = ", ".join(Path(s["path"]).name for s in detail["skipped"][:3])
        more = f" and {len(detail['skipped']) - 3} more" if len(detail["skipped"]) > 3 else ""
        err.print(f"[yellow]{len(detail['skipped'])} {_skipped_what(detail)} skipped[/yellow]: {named}{more} "
                  f"(see: trainyard dataset show {detail['id']})", highlight=False)
    if detail.get("not_images"):
        err.print(ignored_line([Path(p).name for p in detail.get("ignored", [])], detail["not_images"]),
                  markup=False, highlight=False)


@app.command()
def create(
    name: str = typer.Option(..., "--name", help="dataset name"),
    train_folder: Folder = typer.Option(None, help="folder with one subfolder per class"),
    train_list: Folder = typer.Option(None, help="text file of 'path label' lines (multilabel: a CSV of "
                                      "path,label;label rows)"),
    labels: Folder = typer.Option(None, help="labels file, one class name a line (with lists)"),
    val_folder: Folder = typer.Option(None), test_folder: Folder = typer.Option(None),
    val_list: Folder = typer.Option(None), test_list: Folder = typer.Option(None),
    image_root: Folder = typer.Option(None, help="folder that relative list paths start from"),
    size: str = typer.Option("256x256", help="WIDTHxHEIGHT"),
    channels: int | None = typer.Option(None, help="1 (grayscale), 3 (colour) or N (TIFF); default 3, or "
                                        "told by 16-bit and N-channel files"),
    depth: int | None = typer.Option(None, help="8 | 16 bits per sample (default: told by the files)"),
    resize: str | None = typer.Option(None, help=" | ".join(RESIZE_MODES) + " (default squash); detection: "
                                      "pad | squash (default pad)"),
    task: str = typer.Option("classification", help="classification | detection | multilabel | segmentation"),
    train_labels: Folder = typer.Option(None, help="detection: folder of label files, or a COCO .json; "
                                        "segmentation: folder of index-PNG masks named by their image's stem "
                                        "(RGB masks with --mask-colors), or a COCO .json of polygons and RLE"),
    val_labels: Folder = typer.Option(None, help="detection, segmentation: the val folder's labels or masks"),
    test_labels: Folder = typer.Option(None, help="detection, segmentation: the test folder's labels or masks"),
    labels_format: str | None = typer.Option(None, help="detection: kitti | yolo | coco | voc (default: told "
                                             "by the files); segmentation: voc (--train-folder is a VOC root) | "
                                             "coco (default: told by --train-labels)"),
    mask_colors: Folder = typer.Option(None, help="segmentation: colour masks (RGB PNGs) with this colour -> "
                                       "class table: 'R,G,B name' lines, or a JSON {name: [r, g, b]}; the "
                                       "name 'ignore' maps a colour to 255"),
    classes: str | None = typer.Option(None, help="detection: classes to keep, NAME or NAME=NEW, comma-separated; "
                                       "segmentation: every class in mask index order (background,a,b)"),
    val_percent: float = typer.Option(25.0), test_percent: float = typer.Option(0.0),
    min_per_class: int = typer.Option(2), max_per_class: int | None = typer.Option(None),
    encoding: str = typer.Option("none", help="none | png | jpeg"),
    submit: bool = typer.Option(False, "--submit", help="queue on the server instead of building here"),
    as_json: bool = typer.Option(False, "--json", help="print the dataset as JSON on stdout"),
    visibility: str = typer.Option("private", help="private (you and admins) | team (every user sees it)"),
) -> None:
    """Build a dataset from a folder of class folders, or from text lists; or, with --task detection,
    from a folder of images and their box labels (--train-labels); or, with --task segmentation, from a
    folder of images and a folder of their index-PNG masks (--train-labels, --classes), colour masks
    (--mask-colors), a Pascal VOC root (--labels-format voc) or a COCO .json (--train-labels)."""
    from trainyard.datasets.spec import parse_size
    from trainyard.jobs.kinds.dataset import create_dataset_job

    width, height = parse_size(size)
    spec = _spec(name=name, train_folder=train_folder, train_list=train_list, labels_file=labels,
                 val_folder=val_folder, test_folder=test_folder, val_list=val_list, test_list=test_list,
                 image_root=image_root, width=width, height=height, channels=channels, depth=depth, resize=resize,
                 val_percent=val_percent, test_percent=test_percent, min_per_class=min_per_class,
                 max_per_class=max_per_class, encoding=encoding, task=task, train_labels=train_labels,
                 val_labels=val_labels, test_labels=test_labels, labels_format=labels_format, classes=classes,
                 mask_colors=mask_colors)
    from trainyard.jobs.store.actor import creating_with

    ctx = cli_context()
    with creating_with(visibility):
        _run(ctx, lambda: create_dataset_job(ctx, spec, foreground=not submit), as_json, submit)


@app.command()
def append(
    dataset_id: str = typer.Argument(..., help="the dataset to add images to"),
    train_folder: Folder = typer.Option(None), train_list: Folder = typer.Option(None),
    labels: Folder = typer.Option(None), image_root: Folder = typer.Option(None),
    val_percent: float = typer.Option(25.0), test_percent: float = typer.Option(0.0),
    min_per_class: int = typer.Option(1), name: str = typer.Option("", help="name of the new version"),
    submit: bool = typer.Option(False, "--submit"), as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Make a new version of a dataset with the images of another folder or list added."""
    fields = {k: str(v) if isinstance(v, Path) else v for k, v in dict(
        name=name, train_folder=train_folder, train_list=train_list, labels_file=labels,
        image_root=image_root, val_percent=val_percent, test_percent=test_percent,
        min_per_class=min_per_class).items() if v is not None}
    from trainyard.jobs.kinds.dataset import append_dataset_job

    ctx = cli_context()
    _run(ctx, lambda: append_dataset_job(ctx, dataset_id, fields, foreground=not submit), as_json, submit)


@app.command()
def resume(dataset_id: str, submit: bool = typer.Option(False, "--submit", help="let the server run it"),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Continue a dataset build that was killed or failed, from what it had written."""
    refuse_unknown(dataset_id)  # before the store opens (cli/known_jobs.py)
    ctx = cli_context()
    job = ctx.manager.get(dataset_id)
    if job.kind != "dataset":
        raise NotFound(f"job {dataset_id} is a {job.kind} job, not a dataset (see: trainyard jobs resume {dataset_id})")
    _run(ctx, lambda: ctx.manager.resume(dataset_id, foreground=not submit), as_json, submit)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json")) -> None:
    """List datasets, newest first."""
    ctx = cli_context()
    from trainyard.jobs.kinds.documents import DatasetList

    jobs = [job_brief(j) for j in ctx.store.list_jobs(kind="dataset")]
    if as_json:
        emit_json(DatasetList(datasets=jobs))  # as GET /api/datasets answers
        return
    for j in jobs:
        typer.echo(f"{j.id}  {j.status:<8} {j.name}")


@app.command()
def show(dataset_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show a dataset: classes, counts per split, skipped files."""
    refuse_unknown(dataset_id)  # before the store opens (cli/known_jobs.py)
    ctx = cli_context()
    job = ctx.manager.get(dataset_id)
    if job.kind != "dataset":
        raise NotFound(f"job {dataset_id} is a {job.kind} job, not a dataset (see: trainyard jobs show {dataset_id})")
    doc = job_detail(ctx.manager, job)
    if as_json:
        emit_json(doc)  # as GET /api/datasets/{id} answers
        return
    detail = doc.as_json()
    typer.echo(f"{detail['name']} ({detail['id']}): {detail['status']}")
    typer.echo(f"classes: {', '.join(detail['classes'])}")
    if task_traits(detail.get("task")).boxes:
        typer.echo(f"task: {detail['task']} ({detail.get('labels_format')} labels, resize {detail.get('resize')})")
    for line in count_lines(detail):  # one line a split, in training order, on stdout like the rest
        typer.echo(line)
    if detail["skipped"]:
        typer.echo(f"{len(detail['skipped'])} {_skipped_what(detail)} skipped:")
    for skipped in detail["skipped"]:
        typer.echo(f"  skipped {skipped['path']}: {skipped['reason']}")
    if detail.get("not_images"):  # apart: not a fault of the images, and each named
        count, ignored = detail["not_images"], detail.get("ignored", [])
        typer.echo(f"{count} file{'s' * (count != 1)} ignored, not image files:")
        for path in ignored:
            typer.echo(f"  ignored {path}")
        if count > len(ignored):
            typer.echo(f"  ... and {count - len(ignored)} more")
    if detail.get("label_notes"):
        typer.echo(f"{len(detail['label_notes'])} notes (kept, but changed or without labels):")
    for note in detail.get("label_notes", []):
        typer.echo(f"  {note['path']}: {note['reason']}")
