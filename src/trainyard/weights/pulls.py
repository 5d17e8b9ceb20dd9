"""Pulls running in the background of the server, with their live progress for the page.

The server starts a pull in a thread (downloading is waiting on the network, and the files are
published weights, not user code) and the page polls ``status``. One pull per entry at a time;
the store's lock keeps a CLI pull of the same entry out too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from trainyard.core.errors import UserError
from trainyard.weights.store import WeightsStore


@dataclass
class PullState:
    state: str = "running"  # running | done | failed
    done: int = 0  # bytes
    total: int | None = None
    error: str | None = None
    started: float = 0.0


class Pulls:
    """Background pulls of one store, by entry name."""

    def __init__(self, store: WeightsStore):
        self.store = store
        self._states: dict[str, PullState] = {}
        self._later: dict[str, list[str | None]] = {}  # who asked for a pull already running
        self._lock = threading.Lock()

    def start(self, name: str, visibility: str | None = None) -> dict | None:
        """Start pulling ``name`` (its canonical name) unless a pull of it is running, as the
        acting user's (named here: the pull's thread does not know who asked)."""
        self.store.access.check_create()
        owner = self.store.access.who()
        with self._lock:
            current = self._states.get(name)
            if current is None or current.state != "running":
                self._states[name] = PullState(started=time.time())
                threading.Thread(target=self._run, args=(name, owner, visibility), daemon=True,
                                 name=f"pull {name}").start()
            else:  # the running pull stores it for its own user: this one is a user of it too
                self._later[name] = [*self._later.get(name, []), owner]
        return self.status(name)

    def status(self, name: str) -> dict | None:
        state = self._states.get(name)
        return asdict(state) if state else None

    def _run(self, name: str, owner: str | None, visibility: str | None) -> None:
        state = self._states[name]

        def progress(done: int, total: int | None) -> None:
            state.done, state.total = done, total

        try:
            self.store.pull(name, progress, owner, visibility)
            for later in self._later.pop(name, []):
                self.store.pull(name, owner=later)  # present now: makes them a user of it
            state.state = "done"
        except UserError as exc:
            state.state, state.error = "failed", str(exc)
        except Exception as exc:  # a defect: still shown on the page rather than lost in a thread
            state.state, state.error = "failed", f"{type(exc).__name__}: {exc}"
