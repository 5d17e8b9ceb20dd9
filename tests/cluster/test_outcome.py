"""The launcher's failure decision (cluster/outcome.py): a typed value from a typed outcome."""

from trainyard.cluster.outcome import Ending, FailureDecision, Outcome, decide
from trainyard.core.status import Status


def test_a_lost_rank_is_retried_and_a_lost_head_awaited_only_while_restarts_are_left():
    lost, head = Outcome(Ending.LOST, "rank 1 was lost"), Outcome(Ending.HEAD, "head gone")
    assert decide(lost, 0, 2, stopped=False) is FailureDecision.RETRY
    assert decide(head, 1, 2, stopped=False) is FailureDecision.AWAIT_HEAD
    assert decide(lost, 2, 2, stopped=False) is FailureDecision.FINISH
    assert decide(head, 0, 2, stopped=True) is FailureDecision.FINISH  # asked to stop: no restart


def test_every_other_ending_finishes_the_job_with_its_status():
    for ending in (Ending.DONE, Ending.ABORTED, Ending.FAILED, Ending.STORAGE):
        assert decide(Outcome(ending), 0, 5, stopped=False) is FailureDecision.FINISH
    # RESIZE ends an attempt, never a job (the launcher places the next size first)
    assert [e.status for e in Ending] == [Status.DONE, Status.ABORTED] + [Status.FAILED] * 5
