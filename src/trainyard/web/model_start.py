"""Where a new model starts from, for the new-model form's one "Start from" control (issue 46.9):
random weights, weights from the store, a previous model's snapshot, or a weights file.

The form used to choose a starting point in three places (the previous- and pretrained-networks
tabs and a "Start from" panel), and its list of previous models held jobs that could not start
anything: aborted before their first snapshot, still training, or of another task (a detector
offered to a classification dataset). Every model job is listed here with the reason it cannot
start the chosen dataset's training, if any; the page greys those (and the script re-greys them
when another dataset is chosen). All of it comes from the database but one folder listing per
ended model job: whether it has a snapshot.
"""

from __future__ import annotations

from pathlib import Path

from trainyard.core import jobfiles
from trainyard.core.paths import CHECKPOINTS_DIR, checkpoint_epoch, checkpoint_job
from trainyard.core.status import Status
from trainyard.core.tasks import task_traits
from trainyard.datasets.info import DatasetInfo
from trainyard.jobs.context import Context
from trainyard.jobs.views.settings import as_text


def start_values(ctx: Context, path: str | None, entry: str | None) -> dict:
    """A cloned job's starting point as the control's values: its store entry, the model and
    epoch its checkpoint path is from, or the file; "scratch" when it had none."""
    out = {"start": "scratch", "store_entry": entry or "", "previous_job": "", "previous_epoch": "",
           "pretrained_file": ""}
    if entry:
        return {**out, "start": "store"}
    if not path:
        return out
    checkpoint = Path(path)
    job_id = checkpoint_job(checkpoint, ctx.settings.jobs_dir.resolve())
    if job_id is None:
        return {**out, "start": "file", "pretrained_file": path}
    epoch = checkpoint_epoch(checkpoint)
    return {**out, "start": "previous", "previous_job": job_id,
            "previous_epoch": as_text(float(epoch)) if epoch is not None else ""}


def _has_snapshot(ctx: Context, job_id: str) -> bool:
    # Regular files only: a link the job made counts for nothing (core/jobfiles.py).
    names = jobfiles.regular_names(ctx.manager.folder(job_id).work, CHECKPOINTS_DIR)
    return any(checkpoint_epoch(name) is not None for name in names)


def previous_models(ctx: Context, briefs: list[dict]) -> list[dict]:
    """Every model job, with its task (its dataset's) and ``unusable``: why it cannot start any
    training ("still training", "no snapshot"), "" when it can. The task's fit is `grey_previous`'s."""
    dataset_tasks = {j["id"]: DatasetInfo.of(j["summary"]).task for j in briefs if j["kind"] == "dataset"}
    out = []
    for job in briefs:
        if job["kind"] != "model":
            continue
        task = task_traits(dataset_tasks.get(job["parent"]))  # a deleted dataset's: the default task
        if Status(job["status"]).is_active:
            unusable = "still training"
        else:
            unusable = "" if _has_snapshot(ctx, job["id"]) else "no snapshot"
        out.append({"id": job["id"], "name": job["name"], "status": job["status"], "task": task.name,
                    "noun": task.noun, "unusable": unusable, "reason": unusable})
    return out


def grey_previous(previous: list[dict], datasets: list[dict], chosen: list[str]) -> None:
    """Set each previous model's ``reason`` for the first chosen dataset: its own, else "a
    detector" where it is of another task than the dataset's."""
    task = next((d["task"] for d in datasets if chosen and d["id"] == chosen[0]), None)
    for model in previous:
        other_task = task is not None and model["task"] != task
        model["reason"] = model["unusable"] or (f"a {model['noun']}" if other_task else "")
