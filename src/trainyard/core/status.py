"""Job status values and which of them are final."""

from enum import StrEnum


class Status(StrEnum):
    """The life of a job: queued -> (waiting) -> running -> done | aborted | failed.

    A StrEnum: equal to its value, and printed (f-strings, JSON) as just that value.
    """

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

    @property
    def is_unsuccessful(self) -> bool:
        """Ended without finishing its work: failed or aborted (a job that stopped early is done)."""
        return self in UNSUCCESSFUL_STATUSES


FINAL_STATUSES = frozenset({Status.DONE, Status.ABORTED, Status.FAILED})
UNSUCCESSFUL_STATUSES = frozenset({Status.ABORTED, Status.FAILED})
ACTIVE_STATUSES = (Status.QUEUED, Status.WAITING, Status.RUNNING)  # in the order a job goes through them


def vocabulary() -> dict[str, object]:
    """The statuses for the web pages' templates and scripts (base.html renders this as JSON,
    static/status.js reads it): the names, and which are final and active, from here alone."""
    return {"values": {status.name: status.value for status in Status},
            "final": sorted(FINAL_STATUSES), "active": list(ACTIVE_STATUSES)}
