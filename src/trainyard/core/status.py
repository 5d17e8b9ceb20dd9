"""Job status values and which of them are final."""

from enum import Enum


class Status(str, Enum):
    """The life of a job: queued -> (waiting) -> running -> done | aborted | failed."""

    QUEUED = "queued"
    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"
    ABORTED = "aborted"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES

    @property
    def is_active(self) -> bool:
        return not self.is_final


FINAL_STATUSES = frozenset({Status.DONE, Status.ABORTED, Status.FAILED})
