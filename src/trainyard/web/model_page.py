"""What a model's page shows beyond the raw job: settings grouped with readable labels, the
status timeline with durations, and the actions that can work for the job as it stands.

Settings come from the job's spec.json, whatever made it (the form, the CLI, an imported
archive): nested values are flattened into labelled rows, so no Python dict repr reaches a page.
"""

from __future__ import annotations

from trainyard.core.status import Status
from trainyard.jobs.views.settings import (  # noqa: F401 (the page's names, kept where they were)
    GROUPS,
    LABELS,
    flatten,
    label,
    lr_unused,
    seed_used,
    settings_groups,
    text,
    timeline,
)


def actions(job: dict) -> dict:
    """Which of the page's actions can work: Classify needs a snapshot; Resume continues from the
    last checkpoint, so a failed job without one (it failed at start-up) would only fail again."""
    has_snapshot = bool(job.get("snapshots"))
    status = job["status"]
    return {"classify": has_snapshot,
            "resume": status == Status.ABORTED or (status == Status.FAILED and has_snapshot),
            "clone_first": status == Status.FAILED}
