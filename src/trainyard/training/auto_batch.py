"""``batch_size: auto``: the largest batch that fits, chosen by the job before its first step.

On a GPU the batch is found by trying, as Lightning's BatchSizeFinder and Ultralytics' AutoBatch
do: one forward and backward pass of a real batch at the network's default size, doubled while
it fits, then bisected between the last that fit and the first that did not, and a margin taken
off (`GPU_MARGIN`): other batches hold larger boxes or crops, and the allocator fragments.
On the CPU, where running out of memory means swapping rather than an error, the batch is an
estimate from one measured step: the bytes autograd saves for the backward pass per image (the
activations, which grow with the batch) against the memory available, with room for the
backward pass's own copies (`CPU_ACTIVATION_FACTOR`) and for the other processes of the node.

Either way the batch is capped (at most a quarter of the rank's training images, so an epoch has
several steps; `CPU_MAX_BATCH` on the CPU, where larger batches are no faster per image) and,
with several ranks, every rank takes the smallest any of them found. The probes run with the
weights, buffers and random state put back afterwards, so the run is the one a fixed batch of
that size would have trained.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Generator, Iterator
from typing import cast

import psutil
import torch
from torch import nn

from trainyard.core.events import EventWriter
from trainyard.training import distributed
from trainyard.training.data import BatchLoaderBase
from trainyard.training.distributed import Dist
from trainyard.training.state import TrainingError

GPU_MARGIN = 0.9  # of the largest batch that fit
GPU_MAX_BATCH = 4096
CPU_MAX_BATCH = 256
CPU_MEMORY_SHARE = 0.5  # of the memory available now, split among the node's processes
CPU_ACTIVATION_FACTOR = 2.0  # the backward pass's gradients of the activations, beside them
PROBE_BATCH = 4  # the CPU's measured steps: PROBE_BATCH and twice as many images

NOT_EVEN_ONE = ("out of memory even at a batch of 1 image: try a smaller network, smaller images (a crop), "
                "precision fp16 or bf16 on a GPU, or a device with more memory")

# probe(batch) runs one forward and backward pass on a batch of that size; it raises
# torch.OutOfMemoryError when it does not fit.
Probe = Callable[[int], None]


def largest_fitting(probe: Probe, start: int, limit: int) -> int:
    """The largest batch in 1..``limit`` that ``probe`` runs without running out of memory:
    doubling from ``start`` while it fits, then bisecting. 0 when even a batch of 1 does not fit."""
    low, high = 0, limit + 1  # low fits (0: none known), high does not
    size = max(1, min(start, limit))
    while size < high:  # double up (or halve down while none fits) to bracket the largest
        if _fits(probe, size):
            low = size
            if size == limit:
                break
            size = min(size * 2, limit)
        else:
            high = size
            if low == 0:
                size = size // 2
                if size == 0:
                    return 0
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _fits(probe, middle) else (low, middle)
    return low


def _fits(probe: Probe, batch: int) -> bool:
    try:
        probe(batch)
        return True
    except torch.OutOfMemoryError:
        return False
    finally:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def cpu_estimate(saved_bytes: Callable[[int], int], available: int, processes: int, limit: int) -> int:
    """The CPU's batch: (memory share) / (activation bytes per image), capped at ``limit``.

    ``saved_bytes(batch)`` is what one step at that batch keeps for its backward pass; the
    difference between two sizes is the per-image part (the weights autograd saves are not).
    """
    small = saved_bytes(PROBE_BATCH)
    per_image = max(1.0, (saved_bytes(2 * PROBE_BATCH) - small) / PROBE_BATCH) * CPU_ACTIVATION_FACTOR
    budget = available * CPU_MEMORY_SHARE / max(1, processes)
    return max(1, min(limit, int(budget // per_image)))


def settle(model: nn.Module, loaders: list[BatchLoaderBase | None], step_loss: Callable, dtype: torch.dtype | None,
           start: int, ckpt: dict | None, d: Dist, events: EventWriter) -> int:
    """Choose the run's batch (a resumed run: its checkpoint's) and give it to ``loaders``.

    TrainingError when not even a batch of 1 image fits."""
    train_loader = loaders[0]
    assert train_loader is not None
    saved = int((ckpt or {}).get("global_batch") or 0) // d.world_size
    if saved:
        batch = saved
        events.log(f"batch size auto: {batch} images per batch, as the run resumed chose")
    else:
        try:
            batch = choose(model, train_loader, _autocast(step_loss, dtype, train_loader.device), start, d,
                           events.log)
        except torch.OutOfMemoryError:
            raise TrainingError(NOT_EVEN_ONE) from None
    for loader in loaders:
        if loader is not None:
            loader.batch_size = batch
    events.emit("summary", batch_size=batch)  # the job's document says it (jobs/kinds/registry.py)
    return batch


def choose(model: nn.Module, loader: BatchLoaderBase, step_loss: Callable, start: int, d: Dist,
           log: Callable[[str], None]) -> int:
    """The batch size for this run (the same on every rank), said in the log."""
    device = loader.device
    limit = max(1, loader.images_per_epoch // 4)
    with _kept(model, device):
        if device.type == "cuda":
            batch = largest_fitting(lambda b: _step(model, loader, step_loss, b), start,
                                    min(limit, GPU_MAX_BATCH))
            how = "the largest that fit on the GPU"
            batch = max(1, int(batch * GPU_MARGIN)) if batch else 0
        else:
            batch = cpu_estimate(lambda b: _saved_bytes(model, loader, step_loss, b),
                                 psutil.virtual_memory().available, d.world_size, min(limit, CPU_MAX_BATCH))
            how = "estimated from the memory available and a measured step"
    batch = smallest_over_ranks(batch, d)
    if batch < 1:
        raise torch.OutOfMemoryError("not even a batch of 1 image fits")
    margin = f", less a {100 - round(GPU_MARGIN * 100)}% margin" if device.type == "cuda" else ""
    log(f"batch size auto: {batch} images per batch ({how}{margin}; at most {limit}, a quarter of "
        "the training images)")
    return batch


def smallest_over_ranks(value: int, d: Dist) -> int:
    """The smallest ``value`` of any rank (every rank calls it)."""
    return min(distributed.gather(value, d))


def _autocast(step_loss: Callable, dtype: torch.dtype | None, device: torch.device) -> Callable:
    """``step_loss`` in the run's precision (a half-precision batch holds half the activations)."""
    if dtype is None:
        return step_loss

    def in_precision(*args):
        with torch.autocast(device.type, dtype=dtype):
            return step_loss(*args)
    return in_precision


def _step(model: nn.Module, loader: BatchLoaderBase, step_loss: Callable, batch: int) -> None:
    images, labels = _batch(loader, batch)
    loss, _ = step_loss(model, images, labels)
    loss.backward()
    model.zero_grad(set_to_none=True)


def _saved_bytes(model: nn.Module, loader: BatchLoaderBase, step_loss: Callable, batch: int) -> int:
    """The bytes one forward pass at ``batch`` keeps for backward (each storage counted once)."""
    images, labels = _batch(loader, batch)
    storages: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        loss, _ = step_loss(model, images, labels)
    del loss
    return sum(storages.values())


def _batch(loader: BatchLoaderBase, batch: int):
    saved = loader.batch_size
    loader.batch_size = batch
    batches = cast(Generator, loader.batches(0, 0, 1))  # a generator: close() stops its read-ahead
    try:
        return next(batches)
    finally:
        batches.close()
        loader.batch_size = saved


@contextlib.contextmanager
def _kept(model: nn.Module, device: torch.device) -> Iterator[None]:
    """Probing trains nothing: weights, BatchNorm statistics and the random state are put back."""
    state = copy.deepcopy({k: v.detach().cpu() for k, v in model.state_dict().items()})
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        try:
            model.train()
            yield
        finally:
            model.load_state_dict(state)
            model.zero_grad(set_to_none=True)
