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

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable

from trainyard.core.events import EventTail
from trainyard.core.files import write_json_atomic
from trainyard.core.ids import new_job_id
from trainyard.core.paths import JobFolder
from trainyard.core.status import ACTIVE_STATUSES, Status
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.runs import actions, foreground, heartbeat, runner
from trainyard.jobs.runs.actions import RESUME_COMMANDS
from trainyard.jobs.runs.early_stop import EarlyStopper
from trainyard.jobs.runs.errors import JobConflict, JobError, JobNotFound, launched  # noqa: F401 (re-exported)
from trainyard.jobs.runs.progress import fold_events
from trainyard.jobs.scheduling import readiness
from trainyard.jobs.scheduling.leases import reclaim_stale_leases, this_process
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.scheduling.waiting import waiting_message
from trainyard.jobs.store import confinement as confinement_record
from trainyard.jobs.store.store import Job, Store
from trainyard.settings import Settings

LAUNCH_S = 60.0  # how long a job claimed here may go without a recorded pid before it counts as dead


class JobManager:
    """One process's hand on the jobs of a store: creates them, starts them, watches them, ends them.

    It owns what only this process can know: the job processes it started (``_children``), the
    tails of their events.jsonl (``_tails``), the jobs it is terminating (``_stopping``), its
    heartbeat, and the lock that serialises a tick against request handlers. Everything shared
    (statuses, owners, leases) lives in the store; `tick` reconciles the two. Abort, resume and
    delete are in jobs/runs/actions.py, a sweep's early stops in jobs/runs/early_stop.py.
    """

    def __init__(self, settings: Settings, store: Store, pools: Pools):
        self.settings = settings
        self.store = store
        self.pools = pools
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.owner = {"owner_pid": self.pid, "owner_host": self.host}  # this manager, in a job row
        self.holder = this_process()  # recorded with each lease this manager takes
        self.heartbeat = heartbeat.Heartbeat(store, self.host, self.pid, self.holder[1],
                                             settings.heartbeat_timeout_s)
        self._children: dict[str, subprocess.Popen] = {}
        self._tails: dict[str, EventTail] = {}
        self._stopping: set[str] = set()  # jobs being terminated by this process
        # The server ticks in one thread while request handlers abort in others.
        self._lock = threading.RLock()
        self.early_stop = EarlyStopper(self)  # stops a sweep's worst runs (jobs/runs/early_stop.py)

    # -- creating ------------------------------------------------------------------------------
    def folder(self, job_id: str) -> JobFolder:
        return JobFolder(self.settings.jobs_dir / job_id)

    def create(self, kind: str, name: str, spec: dict, *, needs: dict, parent_id: str | None = None,
               group: str | None = None, foreground: bool = False) -> Job:
        """Write the job's folder and spec, and queue it (for the server, or for this process)."""
        self.pools.check(needs)
        job_id = new_job_id()
        while self.store.get_job(job_id) is not None:
            job_id = new_job_id()
        folder = self.folder(job_id)
        folder.path.mkdir(parents=True)
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

    def get(self, job_id: str) -> Job:
        job = self.store.get_job(job_id)
        if job is None:
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
        if any(self._mine(job) for job in active):
            self.heartbeat.beat()
        self._stop_lost(active)
        for job in active:
            if launched(job):
                self._watch(job)
            elif start and ((only is None and job.owner_pid is None) or job.id == only):
                self._try_start(job, foreground=job.id == only)
            elif job.owner_pid is not None and not self._mine(job) and not self._owner_alive(job):
                self._finish(job, Status.ABORTED, "the command that created this job exited before it started")

    def _try_start(self, job: Job, foreground: bool = False) -> None:
        blocked = readiness.missing_input(self.store, job)
        if blocked is None:
            resources = self.pools.acquire(self.store, job.id, job.needs, holder=self.holder)
            if resources is not None:
                self._start(job, resources, foreground)
                return
            blocked = readiness.Blocked(waiting_message(self.pools, self.store, job.needs))  # names the holders
        if blocked.never:
            self._finish(job, Status.FAILED, blocked.reason)
        elif job.status != Status.WAITING or job.status_detail != blocked.reason:
            self.store.update_job_if(job, status=Status.WAITING, status_detail=blocked.reason)

    def _start(self, job: Job, resources: list[str], foreground: bool = False) -> None:
        """Claim the job and launch its process (``foreground``: one that dies with this one)."""
        self.heartbeat.beat(force=True)  # an old beat of ours would read as dead to others
        # Claim the job before launching anything: another manager may be starting it right now.
        if not self.store.update_job_if(job, status=Status.RUNNING, status_detail=None, pid=None,
                                        **self.owner, started_at=time.time(), error=None,
                                        summary={**job.summary, "resources": resources}):
            self.store.release(job.id, resources)  # only ours: the winner holds others
            return
        folder = self.folder(job.id)
        gpu_ids = Pools.gpu_ids(resources)
        try:
            confinement = confinement_record.recall(self.store, job, self.settings.jobs_dir)
            proc = runner.launch(get_kind(job.kind).command(folder, gpu_ids), folder, gpu_ids, confinement,
                                 foreground, self.pools.environment(gpu_ids))
        except OSError as exc:
            self._finish(self.get(job.id), Status.FAILED, f"could not start the job: {exc}")
            return
        self._children[job.id] = proc
        self._tails[job.id] = EventTail(folder.events, next_id=0)
        if job.needs.get("pool") == "cluster":  # it waits on for Ray to place it; its launcher says why
            self.store.update_job(job.id, status=Status.WAITING, status_detail="connecting to the Ray cluster",
                                  pid=proc.pid)
        else:
            self.store.update_job(job.id, pid=proc.pid)  # an abort asked for meanwhile: see _watch

    # -- watching ------------------------------------------------------------------------------
    def _watch(self, job: Job) -> None:
        adopted = not self._mine(job)
        if adopted:
            if self._owner_alive(job):
                return  # someone else watches it
            if self._elsewhere(job):  # its process ran there too: nothing here to check or stop
                self._finish(job, *heartbeat.silent_end(job, heartbeat.silent_for(self.store, job)))
                return
            self.heartbeat.beat(force=True)
            if not self.store.update_job_if(job, **self.owner):  # adopt an orphan, and its leases
                return  # another manager adopted it first
            self.store.hold_leases(job.id, self.holder)
            job = self.get(job.id)
        fold_events(self.store, job, self._tail(job.id))
        self.early_stop.review(job)
        proc = self._children.get(job.id)
        if proc is not None:
            returncode = proc.poll()
            if returncode is None:
                self._stop_if_asked(job)
                return
        elif job.pid is None and not adopted and time.time() - (job.started_at or 0) < LAUNCH_S:
            # Claimed by this process, and not by this manager: another one here (the CLI's beside
            # a server's, in tests) is launching it; its pid is recorded next. Not a death.
            return
        elif runner.process_alive(job.pid, job.started_at):
            self._stop_if_asked(job)
            return
        else:
            returncode = None
        fold_events(self.store, job, self._tail(job.id))
        status, error = runner.final_status(self.folder(job.id), returncode, self._abort_requested(job.id))
        if proc is None and status == Status.FAILED and job.kind in RESUME_COMMANDS:
            # Nobody saw it end (its command or the server was killed): a checkpoint may remain.
            command = RESUME_COMMANDS[job.kind].format(job.id)
            error = f"interrupted: {error}; `{command}` continues it from its last checkpoint"
        self._finish(job, status, error)

    def _stop_if_asked(self, job: Job) -> None:
        """Stop a job whose abort was asked for where it could not be signalled (another machine).

        In a thread: the SIGKILL comes a grace period later, and ticks must go on meanwhile.
        """
        if job.abort_requested and job.id not in self._stopping:
            self._stopping.add(job.id)
            threading.Thread(target=runner.terminate_group, daemon=True,
                             args=(job.pid, self.settings.abort_grace_s, self._children.get(job.id))).start()

    def _stop_lost(self, active: list[Job]) -> None:
        """Stop what this manager runs for jobs it no longer holds: a stall longer than the
        heartbeat timeout made another manager end them, and running on would run them twice."""
        held = {job.id for job in active if self._mine(job)}
        for job_id in [j for j in self._children if j not in held]:
            proc = self._children.pop(job_id)
            self._tails.pop(job_id, None)
            threading.Thread(target=runner.terminate_group, daemon=True,
                             args=(proc.pid, self.settings.abort_grace_s, proc)).start()

    def _mine(self, job: Job) -> bool:
        return job.owner_pid == self.pid and job.owner_host in (None, self.host)

    def _elsewhere(self, job: Job) -> bool:
        return job.owner_host not in (None, self.host)

    def _owner_alive(self, job: Job) -> bool:
        """Whether the job's watcher runs: by pid on this machine, by heartbeat on another."""
        if self._elsewhere(job):
            return heartbeat.silent_for(self.store, job) <= self.settings.heartbeat_timeout_s
        return runner.process_alive(job.owner_pid)

    def _abort_requested(self, job_id: str) -> bool:
        job = self.store.get_job(job_id)
        return bool(job and job.abort_requested)

    def _tail(self, job_id: str) -> EventTail:
        return self._tails.setdefault(job_id, EventTail(self.folder(job_id).events))

    def _finish(self, job: Job, status: Status, error: str | None) -> bool:
        """End the job, unless another manager changed it since ``job`` was read (then False)."""
        status, error, detail = self.early_stop.outcome(job, status, error)
        fields = dict(status=status.value, error=error, finished_at=time.time(), status_detail=detail,
                      eta=None, abort_requested=False)
        if status == Status.DONE and detail is None:  # a run stopped early keeps its progress
            fields["progress"] = 1.0
        if not self.store.update_job_if(job, **fields):
            return False
        self._children.pop(job.id, None)
        self._tails.pop(job.id, None)
        self._stopping.discard(job.id)
        self.store.release(job.id)
        on_end = get_kind(job.kind).on_end
        if on_end is not None:
            on_end(self.folder(job.id), self.settings.uploads_dir)
        return True

    # -- user actions --------------------------------------------------------------------------
    def abort(self, job_id: str) -> Job:
        return actions.abort(self, job_id)

    def resume(self, job_id: str, foreground: bool = False) -> Job:
        """Queue an ended model job again; it continues from its last checkpoint."""
        return actions.resume(self, job_id, foreground)

    def delete(self, job_id: str) -> None:
        actions.delete(self, job_id)

    # -- foreground ----------------------------------------------------------------------------
    def run_foreground(self, job_id: str, on_event: Callable[[dict], None] | None = None,
                       poll_s: float = 0.2) -> Job:
        """Start and watch one job from this process until it ends (the CLI's way: it lives and
        dies with this process, jobs/runs/foreground.py)."""
        return foreground.run(self, job_id, on_event, poll_s)

    def process(self, job_id: str) -> subprocess.Popen | None:
        """The job's process, if this manager started it."""
        return self._children.get(job_id)
