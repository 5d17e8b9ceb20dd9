"""What an earlier run of the same job may have left on the cluster, removed before the next is placed.

A job ended from outside its launcher (its host cut off, marked interrupted by another server)
can leave that launcher's placement group and actors alive for as long as Ray takes to declare
the driver dead (a minute or more), and its ranks training on. A resume's launcher removes every
placement group named for the job (``trainyard-<job id>-...``) other than its own: Ray kills the
actors in a removed group, and each rank ends with its actor. Names carry a token of the launch,
so a resume never asks for a name still taken (Ray's raw "placement group ... already exists").
"""

from __future__ import annotations

import uuid
from typing import Any


def launch_token() -> str:
    """A short token naming this launch's placement groups and actors (unique per launcher)."""
    return uuid.uuid4().hex[:8]


def prefix(job_id: str | None) -> str:
    return f"trainyard-{job_id}-"


def job_of(name: str) -> str:
    """The job id in a placement group's name ``trainyard-<job id>-<attempt>-<token>``."""
    return name.removeprefix("trainyard-").rsplit("-", 2)[0]


def remove_previous(job_id: str | None, token: str) -> list[str]:
    """Remove the job's placement groups left by other launches (not ``token``'s); their names.
    None for a spec without a job id (a test's): nothing can be told to be this job's."""
    if not job_id:
        return []
    from ray.util.placement_group import PlacementGroup, placement_group_table, remove_placement_group

    removed = []
    for pg_id, entry in _table(placement_group_table).items():
        name = entry.get("name") or ""
        if not name.startswith(prefix(job_id)) or f"-{token}" in name or entry.get("state") == "REMOVED":
            continue
        try:
            remove_placement_group(PlacementGroup(_pg_id(pg_id)))
            removed.append(name)
        except Exception:
            pass  # gone meanwhile, or the head is busy: Ray frees it with its driver anyway
    return removed


def _table(table: Any) -> dict:
    try:
        return table() or {}
    except Exception:
        return {}


def _pg_id(hex_id: str) -> Any:
    from ray._raylet import PlacementGroupID

    return PlacementGroupID(bytes.fromhex(hex_id))
