"""The stream of a build's new images: through the decode pipeline into the split writers,
in plan order, with a resume checkpoint every second or so (datasets/resume_state.py).

The parent's work per image is O(1): the plan is read by index from its arrays (no list of
per-image tuples is built), the writers keep their per-class counts as they append, and the
progress report reads those counts.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sized
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from trainyard.core.events import EventWriter
from trainyard.datasets.collect import BuildPlan, DatasetError
from trainyard.datasets.decode_worker import Geometry
from trainyard.datasets.leftovers import new_shm_name
from trainyard.datasets.pipeline import DecodePipeline
from trainyard.datasets.resume_state import ResumeState, save
from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import SPLITS
from trainyard.settings import process_settings

CHECKPOINT_EVERY_S = 1.0
CHECKPOINT_EVERY = 1024  # images, also: a small build gets a checkpoint too
# Tests only: SIGKILL this process right after the stream's image N is written (after the last
# checkpoint, so a resume has written bytes to cut off), to check resume against a real kill.
KILL_AT_ENV = "TRAINYARD_TEST_KILL_BUILD_AT"
Writers = TypeVar("Writers")


def positions(plan: BuildPlan, start: int = 0) -> Iterator[tuple[str, int, str, int]]:
    """(split, index in split, path, label) of every new image from global position ``start``."""
    base = 0
    for split in SPLITS:
        table = plan.splits.get(split)
        n = len(table) if table is not None else 0
        for i in range(max(0, start - base), n):
            assert table is not None
            yield split, i, table.path(i), int(table.labels[i])
        base += n


def finished_before(splits: Mapping[str, Sized], position: int) -> int:
    """Images of the splits the stream finished before ``position`` (for the overall progress)."""
    done = base = 0
    for split in SPLITS:
        n = len(splits[split]) if split in splits else 0
        done += n if base + n <= position else 0
        base += n
    return done


def checkpoint(tmp, plan_hash: str, position: int, writers: dict[str, Any], skipped: list[dict]) -> None:
    states = {split: w.checkpoint() for split, w in writers.items()}
    save(tmp, plan_hash, ResumeState(position, states, skipped))
    for split, w in writers.items():
        w.prune(states[split])  # the previous checkpoint's mean sums are no longer named


def open_writers(resume: ResumeState | None, events: EventWriter,
                 opener: Callable[[ResumeState | None], Writers]) -> tuple[ResumeState | None, Writers]:
    """A task build's split writers, resumed from ``resume`` (its checkpoint), or opened anew
    (``opener(None)``) when the checkpoint's files were damaged or removed."""
    try:
        return resume, opener(resume)
    except (OSError, ValueError, KeyError) as e:
        events.log(f"cannot resume ({e}); building from the start", "warning")
        return None, opener(None)


def started(tmp: Path, plan_hash: str, resume: ResumeState | None, writers: dict[str, Any]) -> ResumeState:
    """Where the stream starts: the checkpoint's position, or 0 with a first checkpoint written."""
    if resume is not None:
        return resume
    checkpoint(tmp, plan_hash, 0, writers, [])
    return ResumeState(0, {}, [])


def decode_all(geometry: Geometry, workers: int, tmp: Path, count: int,
               write: Callable[[DecodePipeline], list[dict]]) -> list[dict]:
    """``write`` ``count`` images through a decode pipeline of ``workers`` processes, its shared
    memory named beside ``tmp``; its skipped list. DatasetError when a worker process dies."""
    try:
        with DecodePipeline(geometry, workers, shm_name=new_shm_name(tmp.parent), count=count) as pipeline:
            return write(pipeline)
    except BrokenProcessPool:
        raise DatasetError("an image worker process died unexpectedly (out of memory, or killed)") from None


def write_new(plan: BuildPlan, writers: dict[str, SplitWriter], pipeline: DecodePipeline, seed: int,
              progress, tmp, plan_hash: str, state: ResumeState) -> list[dict]:
    """Decode the new images from ``state.position`` on; the decode's skipped list, in order."""
    totals = {split: len(plan.splits[split]) if split in plan.splits else 0 for split in SPLITS}
    entries = ((split, i, path, label) for split, i, path, label in positions(plan, state.position))
    return write_entries(entries, totals, lambda split, label, pixels, encoded: writers[split].append(
        pixels, label, encoded), writers, pipeline, seed, progress, (tmp, plan_hash, state))


def write_entries(entries: Iterator[tuple[str, int, str, Any]], totals: dict[str, int],
                  append: Callable[[str, Any, np.ndarray, bytes | None], None], writers: dict[str, Any],
                  pipeline: DecodePipeline, seed: int, progress, resume: tuple[Any, str, ResumeState]) -> list[dict]:
    """The stream itself, for any build: (split, index in split, path, what ``append`` stores with
    the pixels) from the resume state's position on, checkpointing ``writers`` (each with
    ``checkpoint`` and ``prune``, as SplitWriter; a detection build's store boxes too)."""
    tmp, plan_hash, state = resume
    skipped = list(state.skipped)
    position, last = state.position, time.monotonic()
    kill_at = process_settings().test_kill_build_at
    ahead: deque = deque()  # the entries the pipeline was given, in order, until their pixels come back

    def items() -> Iterator[tuple[str, tuple[int, int, int]]]:
        for entry in entries:
            ahead.append(entry)
            yield entry[2], (seed, SPLITS.index(entry[0]), entry[1])

    for pixels, encoded, reason in pipeline.run(items()):
        split, i, path, payload = ahead.popleft()
        if reason is not None:
            skipped.append({"path": path, "reason": reason})
        else:
            assert pixels is not None  # the pipeline gives pixels whenever there is no reason
            append(split, payload, pixels, encoded)
        position += 1
        if position == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        done = i + 1 == totals[split]
        progress.update(split, i + 1, totals[split], force=done)
        if done:
            progress.finished += totals[split]
        if position % CHECKPOINT_EVERY == 0 or time.monotonic() - last >= CHECKPOINT_EVERY_S:
            checkpoint(tmp, plan_hash, position, writers, skipped)
            last = time.monotonic()
    return skipped
