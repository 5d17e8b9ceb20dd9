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
from collections.abc import Iterator

from trainyard.datasets.collect import BuildPlan
from trainyard.datasets.pipeline import DecodePipeline
from trainyard.datasets.resume_state import ResumeState, save
from trainyard.datasets.storage import SPLITS, SplitWriter

CHECKPOINT_EVERY_S = 1.0
CHECKPOINT_EVERY = 1024  # images, also: a small build gets a checkpoint too
# Tests only: SIGKILL this process right after the stream's image N is written (after the last
# checkpoint, so a resume has written bytes to cut off), to check resume against a real kill.
KILL_AT_ENV = "TRAINYARD_TEST_KILL_BUILD_AT"


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


def checkpoint(tmp, plan_hash: str, position: int, writers: dict[str, SplitWriter], skipped: list[dict]) -> None:
    states = {split: w.checkpoint() for split, w in writers.items()}
    save(tmp, plan_hash, ResumeState(position, states, skipped))
    for split, w in writers.items():
        w.prune(states[split])  # the previous checkpoint's mean sums are no longer named


def write_new(plan: BuildPlan, writers: dict[str, SplitWriter], pipeline: DecodePipeline, seed: int,
              progress, tmp, plan_hash: str, state: ResumeState) -> list[dict]:
    """Decode the new images from ``state.position`` on; the decode's skipped list, in order."""
    totals = {split: len(plan.splits[split]) if split in plan.splits else 0 for split in SPLITS}
    skipped = list(state.skipped)
    position, last = state.position, time.monotonic()
    kill_at = int(os.environ.get(KILL_AT_ENV, "-1"))
    items = ((path, (seed, SPLITS.index(split), i)) for split, i, path, _ in positions(plan, position))
    for (split, i, path, label), (pixels, encoded, reason) in zip(positions(plan, position), pipeline.run(items)):
        if reason is not None:
            skipped.append({"path": path, "reason": reason})
        else:
            assert pixels is not None  # the pipeline gives pixels whenever there is no reason
            writers[split].append(pixels, label, encoded)
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
