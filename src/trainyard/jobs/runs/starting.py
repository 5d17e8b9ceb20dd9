"""Starting a queued job: wait for its inputs and resources, claim it, launch its process.

`Starting` decides, for one queued job a tick offers it, whether it can start now, must wait
(and says for what, in the job's status line) or never can (it fails). It owns no state of its
own: the claim is a compare-and-set in the store, the leases are the pools', and the launched
process goes to the manager's `Children` (jobs/runs/children.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.runs import runner
from trainyard.jobs.runs.children import Children
from trainyard.jobs.runs.ownership import Ownership
from trainyard.jobs.scheduling import readiness
from trainyard.jobs.scheduling.fairness import over_quota
from trainyard.jobs.scheduling.quotas import over_resource_quota
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.scheduling.waiting import waiting_message
from trainyard.jobs.store import confinement as confinement_record
from trainyard.jobs.store.store import Job, Store
from trainyard.settings import Settings

Finish = Callable[[Job, Status, "str | None"], bool]  # the manager's: end a job as read


class Starting:
    """Starts the jobs a tick offers it, for ``owner`` (this manager), into ``children``."""

    def __init__(self, settings: Settings, store: Store, pools: Pools, owner: Ownership, children: Children,
                 folder: Callable[[str], JobFolder], finish: Finish):
        self.settings, self.store, self.pools = settings, store, pools
        self._owner, self._children, self._folder, self._finish = owner, children, folder, finish

    def try_start(self, job: Job, foreground: bool = False) -> None:
        """Start ``job`` if its inputs are ready and its resources free; else say what it waits for."""
        blocked = (readiness.missing_input(self.store, job) or over_quota(self.store, job, self.settings.user_max_jobs)
                   or over_resource_quota(self.store, job, self.settings))  # GPUs, CPU slots
        if blocked is None:
            resources = self.pools.acquire(self.store, job.id, job.needs, holder=self._owner.holder)
            if resources is not None:
                self.start(job, resources, foreground)
                return
            blocked = readiness.Blocked(waiting_message(self.pools, self.store, job.needs))  # names the holders
        if blocked.never:
            self._finish(job, Status.FAILED, blocked.reason)
        elif job.status != Status.WAITING or job.status_detail != blocked.reason:
            self.store.update_job_if(job, status=Status.WAITING, status_detail=blocked.reason)

    def start(self, job: Job, resources: list[str], foreground: bool = False) -> None:
        """Claim the job and launch its process (``foreground``: one that dies with this one)."""
        self._owner.heartbeat.beat(force=True)  # an old beat of ours would read as dead to others
        # Claim the job before launching anything: another manager may be starting it right now.
        if not self.store.update_job_if(job, status=Status.RUNNING, status_detail=None, pid=None,
                                        **self._owner.owner, started_at=time.time(), error=None,
                                        summary={**job.summary, "resources": resources}):
            self.store.release(job.id, resources)  # only ours: the winner holds others
            return
        folder = self._folder(job.id)
        gpu_ids = Pools.gpu_ids(resources)
        try:
            confinement = confinement_record.recall(self.store, job, self.settings.jobs_dir)
            process = runner.launch(get_kind(job.kind).command(folder, gpu_ids), folder, gpu_ids, confinement,
                                    foreground, self.pools.environment(gpu_ids))
        except OSError as exc:
            claimed = self.store.get_job(job.id)
            if claimed is not None:
                self._finish(claimed, Status.FAILED, f"could not start the job: {exc}")
            return
        self._children.add(job.id, process)
        if job.needs.get("pool") == "cluster":  # it waits on for Ray to place it; its launcher says why
            self.store.update_job(job.id, status=Status.WAITING, status_detail="connecting to the Ray cluster",
                                  pid=process.pid)
        else:
            self.store.update_job(job.id, pid=process.pid)  # an abort asked for meanwhile: see Watching
