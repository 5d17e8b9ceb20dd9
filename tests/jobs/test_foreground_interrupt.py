"""A stop signal during a foreground job is never lost (jobs/runs/foreground.py): one that lands while
Python runs a ``__del__`` or a weakref callback has its exception printed and dropped, and the
watcher raises for it at its next look (seen in the full suite: a Ctrl-C swallowed by a
WeakValueDictionary callback let the dataset build run to the end)."""

from __future__ import annotations

import os
import signal

import pytest

from trainyard.jobs.runs.foreground import Interrupted, raise_if_signalled, signals_interrupt


class SignalledOnCollection:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)  # the handler's exception is dropped here


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped exception, on purpose
def test_a_signal_swallowed_by_a_finaliser_is_raised_at_the_next_look():
    # What the suite was started with: Python's default handler from a terminal, SIG_IGN from a
    # background shell or nohup. Whatever it was is what must be put back.
    found = signal.getsignal(signal.SIGINT)
    with signals_interrupt() as raised:
        SignalledOnCollection()  # collected at once: __del__ runs, its exception is ignored
        assert raised == [signal.SIGINT]  # the handler ran, but nothing reached us
        with pytest.raises(Interrupted) as caught:
            raise_if_signalled(raised)
    assert caught.value.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is found  # put back


def test_without_a_signal_the_look_raises_nothing():
    with signals_interrupt() as raised:
        raise_if_signalled(raised)
    assert raised == []
