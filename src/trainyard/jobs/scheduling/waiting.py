"""What a job waits for, in words: which resource, and which jobs hold it.

"waiting for a free CPU slot" left a user guessing what to abort, and an inference job behind
a training gave no hint why; a waiting job names the holders instead ("waiting for job 1a2b
(model lenet) to free the CPU"). Read when a job cannot start; a holder's lease may be gone by
then, which only makes the words more general (the next tick starts the job).
"""

from __future__ import annotations

from trainyard.core.vocabulary import gpu_resource, gpu_share
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.store.store import Store

MAX_NAMED = 3  # holders named in one message; more are counted


def waiting_message(pools: Pools, store: Store, needs: dict) -> str:
    pool = needs.get("pool", "cpu")
    leases = store.leases()

    def held(resources: list[str]) -> tuple[str, int]:
        return _holders(store, [leases[r] for r in resources if r in leases])

    if pool == "gpu":
        ids, count = needs.get("ids") or [], needs.get("count", 1)
        what = (f"GPU{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}" if ids
                else "a GPU" if count == 1 else f"{count} GPUs")
        jobs, n = held([gpu_resource(i) for i in ids] or [g.resource for g in pools.gpus])
        it = "it" if (len(ids) if ids else count) == 1 else "them"
        return f"waiting for {what}: {jobs} {'holds' if n == 1 else 'hold'} {it}" if n else f"waiting for {what}"
    if pool == "inference" and pools.gpus:
        jobs, n = held([gpu_share(g.index) for g in pools.gpus])
        return (f"waiting for a GPU: each is in use and already shared with an inference job ({jobs})"
                if n else "waiting for a GPU")
    slots = [f"{pool}:{i}" for i in range(pools.sizes.get(pool, 0))]
    jobs, n = held(slots)
    if pool == "dataset":
        return f"waiting for {jobs} to finish: {len(slots)} dataset builds run at once" if n else \
            "waiting for a dataset-build slot"
    if pool == "inference":
        return (f"waiting for {jobs} to finish: {len(slots)} inference job{'s' if len(slots) > 1 else ''} "
                "run at once beside training (TRAINYARD_INFERENCE_JOBS)") if n else "waiting for an inference slot"
    return f"waiting for {jobs} to free the CPU" if n else "waiting for the CPU"


def holder_ids(store: Store, needs: dict) -> list[str]:
    """The jobs that hold resources of the pool a job with ``needs`` waits for (a foreground
    command names them, so its user knows which job to abort)."""
    pool = needs.get("pool", "cpu")
    return list(dict.fromkeys(job for resource, job in store.leases().items()
                              if resource.split(":", 1)[0] == pool))


def _holders(store: Store, job_ids: list[str]) -> tuple[str, int]:
    """("job X (model lenet)" or "jobs X (...), Y (...) and 2 more", how many jobs)."""
    holders = list(dict.fromkeys(job_ids))
    if not holders:
        return "", 0
    named = ", ".join(_job(store, job_id) for job_id in holders[:MAX_NAMED])
    more = f" and {len(holders) - MAX_NAMED} more" if len(holders) > MAX_NAMED else ""
    return f"{'job' if len(holders) == 1 else 'jobs'} {named}{more}", len(holders)


def _job(store: Store, job_id: str) -> str:
    job = store.get_job(job_id)
    return f"{job_id} ({job.kind} {job.name})" if job is not None else job_id
