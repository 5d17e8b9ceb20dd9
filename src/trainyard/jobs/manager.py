"""The job manager: creates jobs, starts them when their inputs and resources are ready, watches
them, and records how they end.

One manager runs in the server (ticked by the scheduler) and one in each foreground CLI command.
Each job has an owner (``owner_pid``): the process that watches it. A job whose owner died (a
server restart, a killed CLI) is adopted by the next manager that ticks, so no job is left
"running" forever and no lease is held by a dead job.

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

from trainyard.core.errors import Conflict, NotFound, UserError
from trainyard.core.events import EventTail
from trainyard.core.files import write_json_atomic
from trainyard.core.ids import new_job_id
from trainyard.core.paths import JobFolder
from trainyard.core.status import ACTIVE_STATUSES, Status
from trainyard.jobs import runner
from trainyard.jobs.early_stop import EarlyStopper
from trainyard.jobs.kinds import get_kind
from trainyard.jobs.leases import reclaim_stale_leases, this_process
from trainyard.jobs.resources import Pools
from trainyard.jobs.store import Job, Store
from trainyard.settings import Settings

# What a running job's own events may set: a cluster launcher waits for Ray to place its ranks.
LIVE_STATUSES = (Status.WAITING, Status.RUNNING)


def launched(job: Job) -> bool:
    """Has the job's process started? A cluster job's launcher runs while the job waits for
    the cluster (status waiting, with its pid), so ``waiting`` alone does not tell."""
    return job.status == Status.RUNNING or (job.status == Status.WAITING and job.pid is not None)


class JobError(UserError):
    """A request about a job that cannot be met as given; the message says why (HTTP 400)."""


class JobNotFound(NotFound, JobError):
    """The job (or dataset, or model) named does not exist (HTTP 404)."""


class JobConflict(Conflict, JobError):
    """The job exists but its state does not allow this: ended, still running, in use (HTTP 409)."""


LAUNCH_S = 60.0  # how long a job claimed here may go without a recorded pid before it counts as dead


class JobManager:
    def __init__(self, settings: Settings, store: Store, pools: Pools):
        self.settings = settings
        self.store = store
        self.pools = pools
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.owner = {"owner_pid": self.pid, "owner_host": self.host}  # this manager, in a job row
        self.holder = this_process()  # recorded with each lease this manager takes
        self._children: dict[str, subprocess.Popen] = {}
        self._tails: dict[str, EventTail] = {}
        self._stopping: set[str] = set()  # jobs being terminated by this process
        # The server ticks in one thread while request handlers abort in others.
        self._lock = threading.RLock()
        self.early_stop = EarlyStopper(self)  # stops a sweep's worst runs (jobs/early_stop.py)

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
        write_json_atomic(folder.spec, {**spec, "id": job_id})
        job = Job(id=job_id, kind=kind, name=name, status=Status.QUEUED, parent_id=parent_id,
                  group=group, needs=needs, summary={}, created_at=time.time(),
                  **(self.owner if foreground else {}))
        return self.store.add_job(job)

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
        for job in self.store.list_jobs(statuses=ACTIVE_STATUSES, oldest_first=True):
            if launched(job):
                self._watch(job)
            elif start and ((only is None and job.owner_pid is None) or job.id == only):
                self._try_start(job)
            elif job.owner_pid is not None and not self._mine(job) and not self._owner_alive(job):
                self._finish(job, Status.ABORTED, "the command that created this job exited before it started")

    def _try_start(self, job: Job) -> None:
        waiting_for = self._missing_input(job)
        if waiting_for is None:
            resources = self.pools.acquire(self.store, job.id, job.needs, holder=self.holder)
            if resources is not None:
                self._start(job, resources)
                return
            waiting_for = self._busy_message(job.needs)
        if waiting_for.startswith("failed:"):
            self._finish(job, Status.FAILED, waiting_for.removeprefix("failed:").strip())
        elif job.status != Status.WAITING or job.status_detail != waiting_for:
            self.store.update_job_if(job, status=Status.WAITING, status_detail=waiting_for)

    def _missing_input(self, job: Job) -> str | None:
        """Why the job cannot start yet ('failed: ...' if it never will), or None if it can."""
        if not job.parent_id:
            return None
        parent = self.store.get_job(job.parent_id)
        if parent is None:
            return f"failed: the job it needs, {job.parent_id}, was deleted"
        if parent.status == Status.DONE:
            return None
        if parent.status.is_final:
            return f"failed: its {parent.kind} {parent.name} ({parent.id}) {parent.status}"
        return f"waiting for {parent.kind} {parent.name} to finish"

    @staticmethod
    def _busy_message(needs: dict) -> str:
        pool = needs.get("pool", "cpu")
        if pool == "gpu":
            return "waiting for GPUs"
        return "waiting for a free dataset-build slot" if pool == "dataset" else "waiting for a free CPU slot"

    def _start(self, job: Job, resources: list[str]) -> None:
        # Claim the job before launching anything: another manager may be starting it right now.
        if not self.store.update_job_if(job, status=Status.RUNNING, status_detail=None, pid=None,
                                        **self.owner, started_at=time.time(), error=None,
                                        summary={**job.summary, "resources": resources}):
            self.store.release(job.id, resources)  # only ours: the winner holds others
            return
        folder = self.folder(job.id)
        gpu_ids = Pools.gpu_ids(resources)
        try:
            proc = runner.launch(get_kind(job.kind).command(folder, gpu_ids), folder, gpu_ids)
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
            if not self.store.update_job_if(job, **self.owner):  # adopt an orphan, and its leases
                return  # another manager adopted it first
            self.store.hold_leases(job.id, self.holder)
            job = self.get(job.id)
        self._read_progress(job)
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
        self._read_progress(job)
        status, error = runner.final_status(self.folder(job.id), returncode, self._abort_requested(job.id))
        if proc is None and status == Status.FAILED and job.kind == "model":
            # Nobody saw it end (its command or the server was killed): a checkpoint may remain.
            error = f"interrupted: {error}; `trainyard jobs resume {job.id}` continues it from its last checkpoint"
        self._finish(job, status, error)

    def _stop_if_asked(self, job: Job) -> None:
        """Stop a job whose abort was asked for where it could not be signalled (another machine).

        In a thread: the SIGKILL comes a grace period later, and ticks must go on meanwhile.
        """
        if job.abort_requested and job.id not in self._stopping:
            self._stopping.add(job.id)
            threading.Thread(target=runner.terminate_group, daemon=True,
                             args=(job.pid, self.settings.abort_grace_s, self._children.get(job.id))).start()

    def _mine(self, job: Job) -> bool:
        return job.owner_pid == self.pid and job.owner_host in (None, self.host)

    def _owner_alive(self, job: Job) -> bool:
        """Whether the job's watcher runs; one on another machine cannot be checked, so is trusted."""
        if job.owner_host not in (None, self.host):
            return True
        return runner.process_alive(job.owner_pid)

    def _abort_requested(self, job_id: str) -> bool:
        job = self.store.get_job(job_id)
        return bool(job and job.abort_requested)

    def _read_progress(self, job: Job) -> None:
        """Fold new events into the job row: progress, ETA and the summary a listing shows."""
        tail = self._tails.setdefault(job.id, EventTail(self.folder(job.id).events))
        progress, eta, summary = None, job.eta, dict(job.summary)
        live = None
        for _, event in tail.read_new():
            if event["type"] == "status" and event.get("status") in LIVE_STATUSES:
                if event.get("time", 0) >= (job.started_at or 0) - 1:  # not a replay of an earlier run
                    live = (event["status"], event.get("detail"))
            elif event["type"] == "progress" and event.get("total"):
                progress = min(1.0, event["done"] / event["total"])
                eta = event.get("eta")
            elif event["type"] in ("summary", "result"):
                summary.update({k: v for k, v in event.items() if k not in ("type", "time")})
        if live is not None and live != (job.status, job.status_detail):
            self.store.update_job(job.id, status=live[0], status_detail=live[1])
        if progress is not None or summary != job.summary:
            self.store.update_job(job.id, progress=progress if progress is not None else job.progress,
                                  eta=eta, summary=summary)

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
        job = self.get(job_id)
        if job.status.is_final:
            raise JobConflict(f"job {job_id} has already ended ({job.status})")
        if not launched(job):
            with self._lock:
                if self._finish(job, Status.ABORTED, None):
                    return self.get(job_id)
            job = self.get(job_id)  # a manager started it meanwhile: abort it running
            if job.status.is_final:
                return job
        self.store.update_job(job_id, abort_requested=True)
        # Only a process on this machine can be signalled from here; else its starter sees the
        # request (after its launch, or in its next tick on another machine).
        if job.pid and job.owner_host in (None, self.host):
            self._stopping.add(job_id)
            runner.terminate_group(job.pid, self.settings.abort_grace_s, self._children.get(job_id))
        if self._mine(job) or not self._owner_alive(job):
            with self._lock:
                self._watch(self.get(job_id))
        return self.get(job_id)

    def resume(self, job_id: str, foreground: bool = False) -> Job:
        """Queue an ended model job again; it continues from its last checkpoint."""
        job = self.get(job_id)
        if job.kind != "model" or not job.status.is_final:
            raise JobConflict(f"job {job_id} is a {job.status} {job.kind} job; only an ended model job can be resumed")
        if (job.summary or {}).get("imported"):
            raise JobError(f"model {job_id} was imported from an archive; fine-tune from it instead "
                           f"(--pretrained {job_id})")
        self.store.update_job_if(job, status=Status.QUEUED, error=None, finished_at=None, pid=None,
                                 **(self.owner if foreground else {"owner_pid": None, "owner_host": None}),
                                 status_detail="resuming from the last checkpoint")
        return self.get(job_id)

    def delete(self, job_id: str) -> None:
        job = self.get(job_id)
        # A dataset's later versions copied what they need; anything else still reads this job.
        users = [c for c in self.store.children(job_id) if c.kind != "dataset"]
        if users:
            names = ", ".join(f"{c.kind} {c.id}" for c in users[:5])
            raise JobConflict(f"{job.kind} {job_id} is used by other jobs ({names}); delete those first")
        if not job.status.is_final:
            self.abort(job_id)
        self.store.delete_job(job_id)
        shutil.rmtree(self.folder(job_id).path, ignore_errors=True)

    # -- foreground ----------------------------------------------------------------------------
    def run_foreground(self, job_id: str, on_event: Callable[[dict], None] | None = None,
                       poll_s: float = 0.2) -> Job:
        """Start and watch one job from this process until it ends (the CLI's way)."""
        tail = EventTail(self.folder(job_id).events)
        try:
            while True:
                self.tick(only=job_id)
                for _, event in tail.read_new():
                    if on_event:
                        on_event(event)
                job = self.get(job_id)
                if job.status.is_final:
                    return job
                self._wait_for_exit(job_id, poll_s)
        except KeyboardInterrupt:
            self.abort(job_id)
            raise

    def _wait_for_exit(self, job_id: str, seconds: float) -> None:
        """Sleep ``seconds``, or less if the job's process (started here) exits meanwhile.

        The next tick then records the end at once instead of up to a poll later: for a short
        job (a small dataset build) that wait was a good part of what the user waited for.
        """
        proc = self._children.get(job_id)
        if proc is None or proc.poll() is not None:  # not ours, or already seen to end: no busy loop
            time.sleep(seconds)
            return
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass
