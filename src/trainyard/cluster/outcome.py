"""How a cluster attempt ended, and what the launcher does about it: typed values, never strings.

An `Attempt` (attempt.py) ends in one `Outcome`; `decide` turns it into a `FailureDecision`, as
Ray Train v2's controller turns a worker group's failure into one (FailureDecision.RETRY or
RAISE): the launcher (launcher.py) acts on the decision alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from trainyard.core.status import Status


class Ending(Enum):
    """What ended an attempt (attempt.py's docstring says when each happens)."""

    DONE = "done"  # every rank exited 0
    ABORTED = "aborted"  # we were asked to stop, or the ranks agreed to
    FAILED = "failed"  # a rank reported an error of the training itself: no restart would help
    LOST = "lost"  # a training process was killed, or its actor or node went away
    HEAD = "head"  # the cluster's head stopped answering at RAY_ADDRESS
    STORAGE = "storage"  # a node cannot read the dataset or write the job folder
    RESIZE = "resize"  # an elastic job's ranks stopped at an epoch boundary, as its launcher asked

    @property
    def status(self) -> Status:
        """The job's status when this ending is its last: a lost node, a lost head and a full
        disk each end it failed, with the outcome's message."""
        return {Ending.DONE: Status.DONE, Ending.ABORTED: Status.ABORTED}.get(self, Status.FAILED)


class Gone(Enum):
    """A rank that gave no exit code: its actor (or node) went away, or it stopped answering."""

    LOST = "lost"
    SILENT = "silent"


RankEnd = int | Gone  # how a rank ended: its exit code, or gone


class Replaced(Exception):
    """A server ended this launch, or a newer launch of the job replaced it, before its ranks started."""


class HeadLost(Exception):
    """The cluster's head has not answered at RAY_ADDRESS for attempt.HEAD_LOST_S (the message says so)."""


@dataclass(frozen=True)
class Outcome:
    ending: Ending
    message: str | None = None
    # LOST: a worker went away (its actor or node gone or silent), not only a training process
    # killed on a node that still answers: only then may an elastic job go on with fewer.
    worker_gone: bool = False
    lost_nodes: tuple[str, ...] = ()  # the Ray node ids of the workers that went away, where known


class FailureDecision(Enum):
    """What the launcher does after an attempt ended."""

    FINISH = "finish"  # the job ends with the outcome's status and message
    RETRY = "retry"  # another attempt now, from the last checkpoint, on the resources that remain
    AWAIT_HEAD = "await head"  # wait for a head to answer at RAY_ADDRESS, then a fresh launcher resumes


def decide(outcome: Outcome, restarts_used: int, max_restarts: int, stopped: bool) -> FailureDecision:
    """A lost rank is retried and a lost head awaited while restarts are left and nobody asked
    the job to stop; every other ending finishes the job."""
    if stopped or restarts_used >= max_restarts:
        return FailureDecision.FINISH
    if outcome.ending is Ending.LOST:
        return FailureDecision.RETRY
    if outcome.ending is Ending.HEAD:
        return FailureDecision.AWAIT_HEAD
    return FailureDecision.FINISH
