"""Batches of a stored dataset split, as device tensors ready for the network.

Training reads batches, not samples: one ``read_batch`` gathers a whole batch of uint8 images
from the memory-mapped split (or decodes it, for PNG/JPEG splits), in background threads a few
batches ahead; the batch is pinned, copied to the device as uint8 (4x fewer bytes than float),
and converted, cropped, augmented and mean-subtracted there by `normalize_batch`. A JPEG split
on a CUDA device is decoded there instead, by nvJPEG (training/device_decode.py; ``device_decode``
forces that path on any device, for tests).

Everything random is a pure function of (seed, epoch, batch): the epoch's order comes from
``default_rng([seed, epoch])`` (each batch's indices then put in file order, so its gather is
one pass over the memory map) and each batch's crops and augmentation from a generator seeded
with (seed, epoch, batch, rank). So a run resumed at any batch of any epoch sees exactly the
batches the uninterrupted run would have seen, with no loader state to save, on the same device
type: a CUDA generator draws other crops and flips than a CPU one from the same seed (resume.py).

With ``world_size > 1`` (DDP) each rank takes ``order[rank::world_size]``, so global batch i,
the union of every rank's batch i, is exactly ``order[i*G:(i+1)*G]`` with G = world_size *
batch_size: the images one process with batch G would use for its batch i. Training on N
processes with batch B therefore sees the same global batches as one process with batch N*B,
and a resume on another process count continues in the same order. Validation splits strided
too, so every image is counted exactly once over the ranks (some ranks may have one image and
one batch more than others; see ``common_batches``).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

import numpy as np
import torch

from trainyard.artifact.normalize import normalize_batch
from trainyard.core import environment
from trainyard.core.cpus import granted_cpus
from trainyard.datasets.storage import SplitReader
from trainyard.training.augment import AugmentSettings, training_batch
from trainyard.training.device_decode import GuardedDecoder, device_decoder

Batch = tuple[torch.Tensor, torch.Tensor]  # images (N, C, h, w) float, labels (N,) int64
HostLabels = TypeVar("HostLabels")  # a batch's labels as read on the host (a tensor, detection's dicts...)
Labels = TypeVar("Labels")  # a batch's labels as the step gets them, on the device


def decode_threads() -> int:
    """Decode threads for this rank: the CPUs it was granted, shared with the other ranks on its
    node when they were all granted the same set (torch.distributed.run's OMP_NUM_THREADS=1 is
    not a grant: it is set for every rank whatever the node has)."""
    granted = granted_cpus(use_omp=False)
    local_world = environment.local_world_size()
    shared = granted >= (os.cpu_count() or 1) and local_world > 1  # no per-rank affinity was set
    return max(1, granted // local_world if shared else granted)


MAX_DROPPED_SHARE = 0.1  # of an epoch's images, left out in its last, incomplete batch


def _each_batch_sorted(order: np.ndarray, batch_size: int) -> np.ndarray:
    """``order`` with each batch's indices in file order: one gather from the memory map and no
    reordering copy (a batch's images, all its step depends on, are the same)."""
    whole = len(order) - len(order) % batch_size
    return np.concatenate([np.sort(order[:whole].reshape(-1, batch_size), axis=1).ravel(),
                           np.sort(order[whole:])])


class BatchLoaderBase(Generic[HostLabels, Labels]):
    """Iterates one split in batches; ``batches(epoch, start)`` yields (images, labels) on ``device``.

    What every task's loader shares (order, sharding over ranks, read-ahead, exact resume); each
    says how a batch's labels are read (`_read`) and reach the device (`_to_device`).

    In training mode (``train=True``) the order is shuffled per epoch, crops are random,
    ``augment`` applies, and the last incomplete batch is dropped when it is a small share of the
    epoch (under ``MAX_DROPPED_SHARE``), so nearly every step has the same shape; a larger one is
    kept (115 images in batches of 64 would otherwise leave 51 out of every epoch). Otherwise the
    order is the stored order and every image is used once.
    """

    def __init__(
        self,
        reader: SplitReader,
        batch_size: int,
        device: torch.device | str = "cpu",
        *,
        mean: torch.Tensor | None = None,
        crop: int | None = None,
        train: bool = False,
        augment: AugmentSettings | None = None,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        prefetch: int = 3,
        workers: int | None = None,
        channels_last: bool = False,
        std: torch.Tensor | None = None,
        device_decode: bool = False,
    ):
        if batch_size < 1:
            raise ValueError(f"batch size must be at least 1, got {batch_size}")
        self.reader = reader
        self.batch_size = batch_size
        self.device = torch.device(device)
        self.mean = mean.to(self.device) if mean is not None else None
        self.std = std.to(self.device) if std is not None else None  # pretrained weights' scaling
        self.crop = crop
        self.train = train
        self.augment = augment
        self.seed = seed
        self.rank, self.world_size = rank, world_size
        self.prefetch = prefetch
        # Decoding PNG/JPEG releases the GIL, so threads scale to the cores this rank was
        # granted (its affinity or cgroup share, split between the ranks of a node when they
        # share one set); a memory map needs just one.
        self.workers = workers or (1 if reader.encoding == "none" else decode_threads())
        self.channels_last = channels_last
        self.pin = self.device.type == "cuda"
        # JPEG splits on a CUDA device: nvJPEG decodes the batch there (training/device_decode.py).
        self._device_decode = GuardedDecoder(device_decoder(reader, self.device, force=device_decode))
        self._labels = np.asarray(reader.labels, dtype=np.int64)
        # On the batch's device: random numbers drawn on the CPU would have to be copied over,
        # and a blocking copy to the GPU waits for all queued work (a sync every batch).
        self._generator = torch.Generator(device=self.device)
        # False: every incomplete last batch is dropped, the rule before big ones were kept; a
        # run resumed from a checkpoint of that time keeps it (training/resume.py).
        self.keep_big_last = True

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return -(-(self.images_per_epoch - self.dropped_per_epoch) // self.batch_size)

    @property
    def dropped_per_epoch(self) -> int:
        """Images of this rank's shuffled epoch left out in its last, incomplete batch: a handful
        of a large set (steady shapes), never a big share of a small one, never a single image's
        batch kept (BatchNorm cannot train on one)."""
        n = self.images_per_epoch
        rest = n % self.batch_size
        kept = self.keep_big_last and rest > 1 and rest >= MAX_DROPPED_SHARE * n
        if not self.train or n < self.batch_size or kept:
            return 0
        return rest

    @property
    def common_batches(self) -> int:
        """Batches per epoch that every rank has (validation shards may differ by one image)."""
        if self.train:
            return len(self)
        smallest = len(self.reader) // self.world_size  # the last rank's shard
        return -(-smallest // self.batch_size)

    @property
    def images_per_epoch(self) -> int:
        """Images this rank sees in an epoch (before dropping an incomplete last batch)."""
        n = len(self.reader)
        if self.train:
            n -= n % self.world_size  # equal shards, so every rank takes the same number of steps
        return len(range(self.rank, n, self.world_size))

    def order(self, epoch: int) -> np.ndarray:
        """This rank's image indices for ``epoch``, in the order they are used."""
        n = len(self.reader)
        if not self.train:
            return np.arange(n)[self.rank :: self.world_size]
        order = np.random.default_rng([self.seed, epoch]).permutation(n)
        order = order[: n - n % self.world_size]
        return _each_batch_sorted(order[self.rank :: self.world_size], self.batch_size)

    def batches(self, epoch: int = 0, start: int = 0, stop: int | None = None
                ) -> Iterator[tuple[torch.Tensor, Labels]]:
        """Yield batches ``start`` (skipping the ones before, for an exact resume) up to ``stop``."""
        order = self.order(epoch)
        count = len(self)
        stop = count if stop is None else min(stop, count)
        chunks = [order[i * self.batch_size : (i + 1) * self.batch_size] for i in range(start, stop)]
        for index, (images, labels) in enumerate(self._read_ahead(chunks), start):
            yield self._to_device(images, labels, epoch, index)

    def _read(self, indices: np.ndarray) -> tuple[torch.Tensor, HostLabels]:
        """Background thread: one batch's images and labels, on the host (or already on the device)."""
        raise NotImplementedError

    def _to_device(self, images: torch.Tensor, labels: HostLabels, epoch: int, index: int
                   ) -> tuple[torch.Tensor, Labels]:
        """The batch ``index`` of ``epoch``, as the step gets it."""
        raise NotImplementedError

    def _read_ahead(self, chunks: list[np.ndarray]) -> Iterator[tuple[torch.Tensor, HostLabels]]:
        """Read ``chunks`` in order, keeping ``prefetch`` of them in flight on a thread pool."""
        if self.prefetch < 1:
            yield from (self._read(c) for c in chunks)
            return
        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="trainyard-loader")
        pending: deque = deque()
        upcoming = iter(chunks)
        try:
            for chunk in upcoming:
                pending.append(pool.submit(self._read, chunk))
                if len(pending) >= self.prefetch:
                    break
            while pending:
                ready = pending.popleft().result()
                following = next(upcoming, None)
                if following is not None:
                    pending.append(pool.submit(self._read, following))
                yield ready
        finally:
            # Stopped early (abort, end of a fractional epoch): drop what was read ahead.
            pool.shutdown(wait=False, cancel_futures=True)


class BatchLoader(BatchLoaderBase[torch.Tensor, torch.Tensor]):
    """A classification split's loader: labels (N,) int64; images cropped, augmented and
    mean-subtracted on the device (`normalize_batch`, `training_batch`)."""

    def _read(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Background thread: gather one batch as (pinned) uint8 host tensors, or the images
        already decoded on the device."""
        labels = torch.from_numpy(self._labels[indices])
        on_device = self._device_decode(indices)
        if on_device is not None:
            return on_device, labels.pin_memory() if self.pin else labels
        batch = self.reader.read_batch(indices)
        # A 16-bit split's samples travel as int32 (exact): CUDA has few uint16 kernels (the
        # crop's indexing, flips), and normalize_batch scales int32 by 1 / 65535 (FULL_SCALE).
        images = torch.from_numpy(batch.astype(np.int32) if batch.dtype == np.uint16 else batch)
        if self.pin:
            images, labels = images.pin_memory(), labels.pin_memory()
        return images, labels

    def _to_device(self, images: torch.Tensor, labels: torch.Tensor, epoch: int, index: int) -> Batch:
        images = images.to(self.device, non_blocking=True)
        labels = labels.to(self.device, non_blocking=True)
        if not self.train:
            return normalize_batch(images, self.mean, self.crop, channels_last=self.channels_last,
                                   std=self.std), labels
        seed = np.random.SeedSequence([self.seed, epoch, index, self.rank]).generate_state(1)[0]
        generator = self._generator
        generator.manual_seed(int(seed))
        x = training_batch(images, self.mean, self.crop, self.augment, generator, self.channels_last, self.std)
        return x, labels
