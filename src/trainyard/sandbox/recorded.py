"""The store's record of a job's confinement (jobs/store/confinement.py), handed to the
processes that confine its ranks on a cluster's nodes, which cannot open the store.

The server starts a cluster job's launcher with the record in ``TRAINYARD_RECORDED_CONFINEMENT``
(jobs/runs/runner.py); the launcher passes it on to each rank's actor (cluster/attempt.py), which
confines the rank from it (cluster/rank_worker.py) instead of from the job folder's spec.json,
which the ranks' own code writes. Torch-free and store-free.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from trainyard.sandbox.job import ConfinedJob

VARIABLE = "TRAINYARD_RECORDED_CONFINEMENT"


def encode(user_code: bool, reads: list[str], processes: int, nnodes: int, on_cluster: bool) -> str:
    return json.dumps({"user_code": user_code, "reads": list(reads), "processes": processes, "nnodes": nnodes,
                       "on_cluster": on_cluster})


def confined_job(env: Mapping[str, str]) -> ConfinedJob | None:
    """The job as the sandbox reads it, from the record in ``env``; None where there is none (a
    launcher of an older server: the spec is then read, as before)."""
    text = env.get(VARIABLE)
    if not text:
        return None
    record = json.loads(text)
    reads = [str(r) for r in record.get("reads") or []] + [None, None]
    return ConfinedJob.model_validate({
        # ConfinedJob names user code by its source; the record says only whether there is one.
        "network_source": "(recorded: user code)" if record.get("user_code") else None,
        "dataset_dir": reads[0], "pretrained": reads[1], "processes": int(record.get("processes") or 1),
        "nnodes": int(record.get("nnodes") or 1), "cluster": {"recorded": True} if record.get("on_cluster") else None})
