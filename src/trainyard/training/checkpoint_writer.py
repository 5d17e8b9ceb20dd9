"""Checkpoints off the hot path: copy the state to CPU memory, write it in a background thread.

`CheckpointWriter.submit` waits for the previous write (so at most one is in flight and writes
land in order), copies every tensor of the checkpoint to CPU memory (training goes on changing
the live ones in place) and deep-copies the containers around them (metrics lists keep
growing), then hands the copy to a thread that writes it atomically with `save_checkpoint`
(temp file, fsync, rename), exactly as before. The copy goes into the previous snapshot's
tensors, whose write is over: a run's state keeps its shapes, so the copy reuses memory already
mapped instead of faulting in ~90 MB of fresh pages (ResNet-18 with momentum) every checkpoint,
which halves what the training thread pays (bench/training/checkpoint.py). A kill mid-write leaves only a
temp file, which `checkpoint_epochs` ignores: the previous checkpoint stays the latest, intact.

The ``checkpoint`` event is emitted by the training thread (EventWriter is not shared between
threads) once the file is complete: at the next step after the write ends (`announce`), or at
the latest when training waits for it (`wait`, called before a job reports done or aborted).

Test hook (documented, not a sleep race): with ``TRAINYARD_CHECKPOINT_HOLD=DIR`` in the
environment, a write whose file name ``NAME`` has a ``DIR/NAME.hold`` file pauses after the
temp file is written and before the rename; it creates ``DIR/NAME.writing`` while it waits,
and goes on once ``DIR/NAME.hold`` is removed.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import torch

from trainyard.artifact.checkpoint import save_checkpoint
from trainyard.core.events import EventWriter
from trainyard.settings import process_settings
from trainyard.training import fence

HOLD_ENV = "TRAINYARD_CHECKPOINT_HOLD"


def to_cpu_copy(value: Any, spare: list[torch.Tensor] | None = None,
                used: list[torch.Tensor] | None = None) -> Any:
    """``value`` with every tensor copied to CPU memory and every dict/list/tuple rebuilt.

    Tensors are copied into ``spare`` ones (taken in order) where shape and dtype match, else
    into new, contiguous memory; every destination is appended to ``used``, the next call's ``spare``.
    """
    if isinstance(value, torch.Tensor):
        source = value.detach()
        target = spare.pop() if spare else None
        if target is None or target.shape != source.shape or target.dtype != source.dtype:
            # Contiguous whatever the network's layout (channels_last on the CPU too): a
            # checkpoint's tensors save as safetensors and load into any layout, bit for bit.
            target = source.to("cpu", copy=True, memory_format=torch.contiguous_format)
        else:
            target.copy_(source)
        if used is not None:
            used.append(target)
        return target
    if isinstance(value, dict):
        return {k: to_cpu_copy(v, spare, used) for k, v in value.items()}
    if isinstance(value, list):
        return [to_cpu_copy(v, spare, used) for v in value]
    if isinstance(value, tuple):
        return tuple(to_cpu_copy(v, spare, used) for v in value)
    return value  # str, numbers, bool, None: immutable


def _hold_if_asked(path: Path) -> None:
    folder = process_settings().checkpoint_hold
    if not folder:
        return
    hold = Path(folder) / f"{path.name}.hold"
    if not hold.exists():
        return
    (Path(folder) / f"{path.name}.writing").touch()
    while hold.exists() and fence.reason() is None:  # a job ended meanwhile: the write goes at once
        time.sleep(0.01)


def _before_rename(path: Path) -> None:
    _hold_if_asked(path)
    fence.check()  # a cluster job that ended meanwhile: the temp file goes, nothing lands


class CheckpointWriter:
    """Writes checkpoints one at a time in a background thread; see the module docstring."""

    def __init__(self, events: EventWriter):
        self.events = events
        self._thread: threading.Thread | None = None
        self._pending: tuple[float, Path] | None = None  # written, not yet announced
        self._error: BaseException | None = None
        self._spare: list[torch.Tensor] = []  # the last snapshot's tensors, reversed (popped in order)

    def submit(self, path: Path, epoch: float, state: dict) -> None:
        self.wait()  # the previous write first: one in flight, files in epoch order (and spare is free)
        used: list[torch.Tensor] = []
        snapshot = to_cpu_copy(state, self._spare, used)
        self._spare = used[::-1]
        self._pending = (epoch, path)
        self._thread = threading.Thread(target=self._write, args=(path, snapshot),
                                        name="checkpoint-writer", daemon=True)
        self._thread.start()

    def _write(self, path: Path, snapshot: dict) -> None:
        try:
            with fence.checkpoint_write():
                save_checkpoint(path, snapshot, before_rename=lambda: _before_rename(path))
        except BaseException as exc:  # re-raised in the training thread by wait()
            self._error = exc

    def announce(self) -> None:
        """Emit the ``checkpoint`` event of a write that has finished (cheap; call every step)."""
        if self._thread is not None and not self._thread.is_alive():
            self.wait()

    def wait(self) -> None:
        """Block until the write in flight is complete, announce it, re-raise its error if any."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error, self._pending = self._error, None, None
            raise error
        if self._pending is not None:
            epoch, path = self._pending
            self._pending = None
            self.events.emit("checkpoint", epoch=epoch, path=str(path))
