"""The job manager: creates jobs, starts them when their inputs and resources are ready, watches
them, and records how they end.

One manager runs in the server (ticked by the scheduler) and one in each foreground CLI command.
Each job has an owner (``owner_pid`` on ``owner_host``): the process that watches it. A job whose
owner died (a server restart, a killed CLI) is adopted by the next manager that ticks, so no job
is left "running" forever and no lease is held by a dead job. An owner on this machine is checked
by its pid; one on another machine by its heartbeat in the store (jobs/runs/heartbeat.py): when it has
been silent too long, its running jobs end as interrupted.

Several managers may share one database (two servers on PostgreSQL, or a server and CLIs on
SQLite), each acting on what it read at the start of its tick. So every change of a job's
status is a compare-and-set on the status and owner it read (``Store.update_job_if``): of two
managers starting the same queued job, or adopting the same orphan, exactly one wins.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading
import time
from collections.abc import Callable

from trainyard.core import fence
from trainyard.core.files import write_json_atomic
from trainyard.core.ids import new_job_id
from trainyard.core.paths import JobFolder
from trainyard.core.status import ACTIVE_STATUSES, Status
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.runs import actions, foreground
from trainyard.jobs.runs.children import Children
from trainyard.jobs.runs.early_stop import EarlyStopper
from trainyard.jobs.runs.errors import JobConflict, JobError, JobNotFound, launched  # noqa: F401 (re-exported)
from trainyard.jobs.runs.ownership import Ownership
from trainyard.jobs.runs.starting import Starting
from trainyard.jobs.runs.watching import Watching
from trainyard.jobs.scheduling import quotas
from trainyard.jobs.scheduling.fairness import fair_order
from trainyard.jobs.scheduling.leases import reclaim_stale_leases
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store import confinement as confinement_record
from trainyard.jobs.store.store import Job, Store
from trainyard.settings import Settings


class JobManager(Ownership):
    """One process's hand on the jobs of a store: the lifecycle of each, from creation to its end.

    It owns the lifecycle: creating a job, the tick that offers each active job to its parts,
    recording a job's end, and the lock that serialises a tick against request handlers. Its
    parts own the rest: its identity and heartbeat as a job's owner (`Ownership`, which it is,
    jobs/runs/ownership.py), the processes it started with their event tails (``children``,
    jobs/runs/children.py), starting a queued job (``starting``, jobs/runs/starting.py) and
    watching a launched one (``watching``, jobs/runs/watching.py). Everything shared (statuses,
    owners, leases) lives in the store; `tick` reconciles the two. Abort, resume and delete are
    in jobs/runs/actions.py, a sweep's early stops in jobs/runs/early_stop.py.
    """

    def __init__(self, settings: Settings, store: Store, pools: Pools):
        self.settings = settings
        self.store = store
        self.pools = pools
        super().__init__(store, settings)  # who this manager is in a job row (jobs/runs/ownership.py)
        self._lock = threading.RLock()  # the server ticks in one thread while request handlers abort in others
        self.early_stop = EarlyStopper(store, self.folder)  # stops a sweep's worst runs (jobs/runs/early_stop.py)
        self.children = Children(self.folder, settings.abort_grace_s)
        self.starting = Starting(settings, store, pools, self, self.children, self.folder, self.finish)
        self.watching = Watching(store, self, self.children, self.early_stop, self.folder, self.get, self.finish)

    # -- creating ------------------------------------------------------------------------------
    def folder(self, job_id: str) -> JobFolder:
        return JobFolder(self.settings.jobs_dir / job_id)

    def create(self, kind: str, name: str, spec: dict, *, needs: dict, parent_id: str | None = None,
               group: str | None = None, foreground: bool = False) -> Job:
        """Write the job's folder and spec, and queue it (for the server, or for this process)."""
        self.pools.check(needs)
        self.check_disk(kind)
        job_id = new_job_id()
        while self.store.get_job(job_id) is not None:
            job_id = new_job_id()
        folder = self.folder(job_id)
        folder.create()  # the server's part and the job's work folder (core/paths.py)
        if foreground:
            self.heartbeat.beat(force=True)  # this process holds it from now on
        job = Job(id=job_id, kind=kind, name=name, status=Status.QUEUED, parent_id=parent_id,
                  group=group, needs=needs, summary={}, created_at=time.time(),
                  **(self.owner if foreground else {}))
        try:
            write_json_atomic(folder.spec, {**spec, "id": job_id})
            # Its confinement, decided now from what was validated: never read back from the folder.
            confinement_record.record(self.store, job_id, confinement_record.facts_for_new(
                self.store, self.settings.jobs_dir, kind, spec))
            return self.store.add_job(job)
        except BaseException:  # refused (a full disk, a read-only database): no folder without a job
            shutil.rmtree(folder.path, ignore_errors=True)
            raise

    def check_disk(self, kind: str) -> None:
        """Refuse a new dataset or model job of a user at their disk quota (jobs/scheduling/quotas.py),
        recording the refusal in the audit log."""
        from trainyard.jobs.accounts import audit

        actor = accounts.current()
        try:
            quotas.check_disk(self.store, actor.name if actor else None, kind, self.settings)
        except quotas.OverQuota as exc:
            audit.record(self.store, actor.name if actor else None, "quota.refuse", f"{kind}: {exc}",
                         actor.source if actor else None)
            raise

    def get(self, job_id: str) -> Job:
        job = self.store.get_job(job_id)
        if job is None or not accounts.may_see(job):  # another user's private job: as if none
            raise JobNotFound(f"no job with id {job_id!r}")
        return job

    # -- the scheduling pass -------------------------------------------------------------------
    def tick(self, only: str | None = None) -> None:
        """One pass: adopt orphans, finish exited jobs, start ready ones, refresh progress.

        ``only`` restricts starting to one job (a foreground CLI runs just its own job).
        """
        with self._lock:
            self._tick(only)

    def reap(self) -> None:
        """Notice jobs and leases whose holder is gone, without starting anything.

        What a CLI command that reads jobs does first: a job whose command was killed shows as
        interrupted (and can be resumed), not "running" for good, even when no server runs.
        """
        with self._lock:
            self._tick(None, start=False)

    def _tick(self, only: str | None, start: bool = True) -> None:
        reclaim_stale_leases(self.store)
        active = self.store.list_jobs(statuses=ACTIVE_STATUSES, oldest_first=True)
        if any(self.mine(job) for job in active):
            self.heartbeat.beat()
        self.children.stop_lost({job.id for job in active if self.mine(job)})
        for job in fair_order(active):  # round-robin between users (jobs/scheduling/fairness.py)
            if launched(job):
                self.watching.watch(job)
            elif start and ((only is None and job.owner_pid is None) or job.id == only):
                self.starting.try_start(job, foreground=job.id == only)
            elif job.owner_pid is not None and not self.mine(job) and not self.owner_alive(job):
                self.finish(job, Status.ABORTED, "the command that created this job exited before it started")

    def finish(self, job: Job, status: Status, error: str | None) -> bool:
        """End the job, unless another manager changed it since ``job`` was read (then False)."""
        with self._lock:
            return self._finish(job, status, error)

    def _finish(self, job: Job, status: Status, error: str | None) -> bool:
        status, error, detail = self.early_stop.outcome(job, status, error)
        fields = dict(status=status.value, error=error, finished_at=time.time(), status_detail=detail,
                      eta=None, abort_requested=False)
        if status == Status.DONE and detail is None:  # a run stopped early keeps its progress
            fields["progress"] = 1.0
        # Its ranks stop before the row says ended, if this read holds (a stale one would stop a resume's)
        end_fence = functools.partial(fence.end, self.folder(job.id).work, error or status.value, by="server")
        if not self.store.change_job_if(job, fields, end_fence if job.needs.get("pool") == "cluster" else None):
            return False
        self.children.forget(job.id)
        self.store.release(job.id)
        if job.kind in quotas.STORED_KINDS:  # its size, once, for its owner's disk quota
            quotas.record_size_soon(self.store, self.folder(job.id).path, job.id)
        on_end = get_kind(job.kind).on_end
        if on_end is not None:
            on_end(self.folder(job.id), self.settings.uploads_dir)
        return True

    def terminate(self, job: Job) -> None:
        """SIGTERM the job's process group on this machine (once it has one), SIGKILL after the grace period."""
        self.children.terminate(job)

    def look_now(self, job: Job) -> None:
        """Watch the job once now (read afresh), if ``job`` as read is this manager's or its owner is gone."""
        if self.mine(job) or not self.owner_alive(job):
            with self._lock:
                self.watching.watch(self.get(job.id))

    # -- user actions --------------------------------------------------------------------------
    # Each of these needs the job's owner or an admin (jobs/store/actor.py), whoever asks.
    def abort(self, job_id: str) -> Job:
        accounts.check_change(self.get(job_id))
        return actions.abort(self, job_id)

    def resume(self, job_id: str, foreground: bool = False) -> Job:
        """Queue an ended model job again; it continues from its last checkpoint."""
        accounts.check_change(self.get(job_id))
        return actions.resume(self, job_id, foreground)

    def delete(self, job_id: str) -> None:
        accounts.check_change(self.get(job_id))
        actions.delete(self, job_id)

    # -- foreground ----------------------------------------------------------------------------
    def run_foreground(self, job_id: str, on_event: Callable[[dict], None] | None = None,
                       poll_s: float = 0.2) -> Job:
        """Start and watch one job from this process until it ends (the CLI's way: it lives and
        dies with this process, jobs/runs/foreground.py)."""
        return foreground.run(self, job_id, on_event, poll_s)

    def process(self, job_id: str) -> subprocess.Popen | None:
        """The job's process, if this manager started it."""
        return self.children.process(job_id)
