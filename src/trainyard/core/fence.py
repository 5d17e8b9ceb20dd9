"""The fence: how every process of a cluster job learns that its attempt has ended, from a file
that outlives the head, the launcher and the server that started it.

A cluster job's processes live on several machines: its launcher beside the server that started
it, its ranks on the nodes Ray chose. Any of them can be cut off, and the job can be ended by
another party (the launcher after a lost rank, another server that found the launcher's host
silent and marked the job interrupted, a resume that launches it again). A rank that learns of
the end only from the launcher (SIGTERM through its Ray actor) or from Ray (its actor killed
when the owner is declared dead, a minute or more) trains on meanwhile, and writes checkpoints
and events into a job that has already ended.

Why a file: every node of a cluster job must see the job folder at the same path (the launcher
checks it before training), so it is the one source every party reaches without the head
(the launcher and servers write it, the ranks read it). The alternatives fall short: the store
row needs a database client in the rank (the training process imports none), a Ray named actor
or KV entry lives on the head (lost with it), and a short collective timeout on the process
group only notices a dead peer, not a job ended by a server while all its ranks are healthy (a
one-rank job has no peer at all).

``JOB_DIR/fence/fence.json`` holds the current launch (a token per launcher process), the attempt
it is on (a restart after a lost rank is the next attempt), and, once the attempt has ended,
why and who ended it (``launcher`` or ``server``). Its writers:

- the launcher, on start (`begin`: a new launch, which fences out every earlier launch's ranks),
  before each attempt's ranks start (`begin_attempt`), and when an attempt ends for any reason
  but the ranks' own report (`end`, by ``launcher``); the last two only while the fence is
  still its launch's, so a launcher cut off with its host that comes back after a resume never
  ends or takes the fence of the launch that replaced it;
- the job manager, as it records the end of a cluster job in the store (`end`, by ``server``,
  inside the transaction that changes the row: once the store says ended, the fence already
  does, and a manager acting on a stale read of the row, whose change is refused, ends nothing).

The launcher of an elastic job that runs on fewer workers than it asked for also asks its ranks
there to stop at the next epoch boundary, from a checkpoint, so that it can place them again on
more workers once nodes return (`request_resize`: ``resize`` holds the new count).

Its readers (`Watch`, a cached stat and read): each rank (training/fence.py) checks it before
every event and checkpoint rename, and a thread checks it every second and ends the rank; the
launcher checks that no server has ended its launch before it writes. Writes are atomic
(rename), so a reader sees the old fence or the new one.

Where: in the server's part of the job folder (core/paths.py, ``JobFolder.fence``), not in the
work folder, which the job's own code may write: a rank running user code could otherwise
delete or rewrite its fence and train on after its job ended. The sandbox binds the fence's
folder read-only into a rank (sandbox/job.py): the folder, not the file, whose replacement by
rename a file bind would never show. Each write goes through a descriptor of that folder and
follows no link (core/jobfiles.py: a job made before the split holds it in its own folder). A
fence written before it moved (``work/fence.json``) is still read where no new one exists; the
next write puts it in its folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from trainyard.core import jobfiles
from trainyard.core.environment import FENCE_VARIABLE
from trainyard.core.paths import JobFolder

FILE = "fence.json"
ENV = FENCE_VARIABLE  # a rank's "LAUNCH/ATTEMPT": the attempt it belongs to


@dataclass(frozen=True)
class State:
    launch: str
    attempt: int | None = None  # None: the launcher has not started ranks yet
    ended: str | None = None  # why the attempt ended, once it has
    by: str | None = None  # "launcher" | "server"
    resize: int | None = None  # an elastic job's next size: its ranks stop at an epoch boundary


def location(job_dir: str | os.PathLike) -> Path:
    """The folder holding the job's fence (``job_dir``: its job folder or work folder): its
    fence folder, unless only a fence written before the move exists (in the work folder)."""
    folder = JobFolder.of(job_dir)
    if not os.path.lexists(folder.fence / FILE) and os.path.lexists(folder.work / FILE):
        return folder.work
    return folder.fence


def read(job_dir: str | os.PathLike) -> State | None:
    """The job's fence; None where it has none (a local job) or it cannot be read."""
    try:  # through jobfiles: no link followed, no FIFO opened (the old place is the job's)
        doc = jobfiles.read_json(location(job_dir), FILE, max_bytes=64 << 10)
        return State(str(doc["launch"]), doc.get("attempt"), doc.get("ended"), doc.get("by"), doc.get("resize"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(job_dir: str | os.PathLike, state: State) -> None:
    folder = JobFolder.of(job_dir).fence
    folder.mkdir(mode=0o755, exist_ok=True)  # readable by a rank's own uid (sandbox/rank_network.py)
    doc = {"launch": state.launch, "attempt": state.attempt, "ended": state.ended, "by": state.by,
           "resize": state.resize}
    jobfiles.replace(folder, FILE, json.dumps(doc, indent=2, sort_keys=True).encode())


def begin(job_dir: str | os.PathLike, launch: str) -> None:
    """A new launch of the job (a launcher starting): every other launch is fenced out."""
    _write(job_dir, State(launch))


def begin_attempt(job_dir: str | os.PathLike, launch: str, attempt: int) -> bool:
    """Launch ``launch``'s attempt ``attempt`` is the job's current one (the ranks of any other
    stop); False, writing nothing, where ``launch`` is no longer the job's or a server ended it:
    a launcher that was cut off and comes back must never take the fence from the launch that
    replaced it."""
    state = read(job_dir)
    if state is None or state.launch != launch or state.by == "server":
        return False
    _write(job_dir, State(launch, attempt))
    return True


def end(job_dir: str | os.PathLike, reason: str, by: str, launch: str | None = None) -> bool:
    """End the job's current attempt (``reason``, ended ``by``); False where it has no fence or
    it cannot be written (the actors' end still ends the ranks). ``launch``: only if the
    current attempt is that launch's (a launcher ends its own, never a later launch's). The
    first end's reason stays: a server that records the end after the launcher keeps its words
    (the ranks have read them)."""
    state = read(job_dir)
    if state is None or (launch is not None and state.launch != launch):
        return False
    if state.ended is None:
        try:
            _write(job_dir, State(state.launch, state.attempt, " ".join(reason.split()), by))
        except OSError:
            return False
    return True


def request_resize(job_dir: str | os.PathLike, launch: str, workers: int) -> None:
    """Ask launch ``launch``'s current attempt to stop at the next epoch boundary, for ``workers``."""
    state = read(job_dir)
    if state is not None and state.launch == launch and state.ended is None:
        _write(job_dir, State(state.launch, state.attempt, resize=workers))


def rank_value(launch: str, attempt: int) -> str:
    """What a rank's ENV holds."""
    return f"{launch}/{attempt}"


class Watch:
    """Whether the fence still lets one launch (and attempt) write; the file is read again only
    when its stat changes, so a check costs one stat."""

    def __init__(self, job_dir: str | os.PathLike, launch: str, attempt: int | None = None,
                 ended_by: tuple[str, ...] = ("launcher", "server")):
        folder = JobFolder.of(job_dir)
        self.job_dir, self.launch, self.attempt, self.ended_by = folder.path, launch, attempt, ended_by
        self._places = (folder.fence / FILE, folder.work / FILE)  # as `location` ranks them
        self._key: tuple[int, int, int] | None = None
        self._reason: str | None = None
        self.resize: int | None = None  # the size the launcher asks for, once it does

    @classmethod
    def for_rank(cls, job_dir: str | os.PathLike, value: str) -> Watch:
        launch, _, attempt = value.partition("/")
        return cls(job_dir, launch, int(attempt) if attempt.isdigit() else None)

    def reason(self) -> str | None:
        """Why this launch or attempt must write nothing more, or None while it stands. Once
        fenced, always fenced (a later fence is never older)."""
        if self._reason is not None:
            return self._reason
        st = self._stat()
        if st is None:
            return None  # no fence (yet): nothing has ended it
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self._key:
            self._key = key
            state = read(self.job_dir)
            self._reason = self._judge(state)
            if self._reason is None and state is not None:
                self.resize = state.resize
        return self._reason

    def _stat(self) -> os.stat_result | None:
        """The fence's stat: one call where it is in its folder (every fence written since the
        move), the old place in the work folder tried only when it is not."""
        for place in self._places:
            try:
                return os.lstat(place)
            except OSError:
                continue
        return None

    def _judge(self, state: State | None) -> str | None:
        if state is None:
            return None
        if state.launch != self.launch or (self.attempt is not None and state.attempt != self.attempt):
            return "a newer launch of the job replaced this one"
        if state.ended is not None and state.by in self.ended_by:
            return state.ended
        return None
