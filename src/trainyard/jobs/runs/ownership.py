"""A job manager's identity as a job's owner, and its judgement of other owners.

Each job row names its owner (``owner_pid`` on ``owner_host``): the manager that watches it.
`Ownership` is that identity for one process, with the heartbeat that proves it alive to
managers on other machines (jobs/runs/heartbeat.py), and the one place that tells whether a
job is this manager's, runs on another machine, or has an owner that is gone. The JobManager
is one (it derives from it), so ``manager.host`` and ``manager.owner`` are these.
"""

from __future__ import annotations

import os
import socket

from trainyard.core.processes import process_alive
from trainyard.jobs.runs import heartbeat
from trainyard.jobs.scheduling.leases import this_process
from trainyard.jobs.store.store import Job, Store
from trainyard.settings import Settings


class Ownership:
    """This process as an owner of jobs. It owns: its pid and host (``owner``: the fields a job row
    records for it), the holder its GPU leases name (``holder``) and its ``heartbeat``."""

    def __init__(self, store: Store, settings: Settings):
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.owner = {"owner_pid": self.pid, "owner_host": self.host}  # this manager, in a job row
        self.holder = this_process()  # recorded with each lease this manager takes
        self.heartbeat = heartbeat.Heartbeat(store, self.host, self.pid, self.holder[1],
                                             settings.heartbeat_timeout_s)
        self._owners_store = store
        self._timeout_s = settings.heartbeat_timeout_s

    def mine(self, job: Job) -> bool:
        return job.owner_pid == self.pid and job.owner_host in (None, self.host)

    def elsewhere(self, job: Job) -> bool:
        """Whether the job's owner runs on another machine (its process ran there too)."""
        return job.owner_host not in (None, self.host)

    def owner_alive(self, job: Job) -> bool:
        """Whether the job's watcher runs: by pid on this machine, by heartbeat on another."""
        if self.elsewhere(job):
            return heartbeat.silent_for(self._owners_store, job) <= self._timeout_s
        return process_alive(job.owner_pid)
