"""Data-parallel training over several processes (DDP): the process group and what crosses it.

A job on N GPUs (or N CPU processes) runs one ``trainyard.training.run`` per device, started by
``torch.distributed.run``, which sets RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE and the
rendezvous address. `setup` joins the process group from those variables: NCCL between GPUs,
gloo between CPU processes. Every rank runs the same loop on its shard of each global batch;
DDP averages the gradients, so the step equals one process training on the whole global batch.

Roles: global rank 0 alone writes events and checkpoints. Metrics are summed over ranks
(`all_reduce_sum`) before anyone reports them, so every rank holds the same figures and takes
the same decisions (divergence, best epoch) at the same step.

Stopping: an abort (SIGTERM) may reach the ranks at different steps, and a rank that left the
loop alone would leave the others blocked in their next collective. `StopAgreement` makes the
ranks agree instead: each step all ranks OR their stop flags over a separate gloo group, without
waiting on the device, and all act on the result one step later.

Failures: a rank that dies makes torch.distributed.run (max_restarts 0) stop the others; their
next collective fails, or times out after ``COLLECTIVE_TIMEOUT_S`` so a hung peer cannot block
forever. A rank other than 0 that fails with an error leaves it in ``rank-N.error`` in the job
folder, where rank 0 picks it up for the job's message (rank_failures.py).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from trainyard.core import environment
from trainyard.core.errors import UserError
from trainyard.core.interfaces import bind_towards_rendezvous
from trainyard.core.rank_threads import rank_threads
from trainyard.sandbox.rank_network import lock_network
from trainyard.settings import process_settings
from trainyard.training.rank_failures import first_sentence

# Long enough for rank 0 to write a checkpoint while the others wait at their next all-reduce.
COLLECTIVE_TIMEOUT_S = process_settings().collective_timeout_s
# How long the ranks may take to meet at the start (a rank that never comes, an address that
# does not answer): then the job fails saying so.
JOIN_TIMEOUT_S = process_settings().join_timeout_s


@dataclass(frozen=True)
class Dist:
    """Where this process stands in the job: its rank among ``world_size`` processes."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    backend: str | None = None  # "nccl" | "gloo"; None: one process, no process group
    control: Any = None  # a gloo group for host-side agreement (stop flags, plans, RNG states)

    @property
    def enabled(self) -> bool:
        return self.backend is not None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def node_rank(self) -> int:
        return self.rank // max(self.local_world_size, 1)


SINGLE = Dist()


def launched() -> bool:
    """True in a worker started by torch.distributed.run (it sets RANK and WORLD_SIZE)."""
    return environment.launched_as_rank()


def env_rank() -> int:
    """This process's global rank from the environment, without joining anything (0 if alone)."""
    return environment.torch_rank()


def setup(own_process: bool = False) -> Dist:
    """Join the job's process group when launched by torch.distributed.run; else `SINGLE`.

    A launch of one process (torchrun --nproc-per-node=1) still makes a group, so the DDP code
    path can be measured on a single GPU. ``own_process`` (the job's process, not a test calling
    in): one process alone takes the threads it was granted too (core/rank_threads.py).
    """
    if not launched():
        if own_process or environment.rank_cpus_given():  # a one-rank cluster job: Ray's CPUs
            torch.set_num_threads(rank_threads(1))
        # A one-worker cluster job has no group to form: its network is locked at once, before
        # any user code (it returned unlocked, and its code reached its node's Ray services).
        lock_network()
        return SINGLE
    rank, world = environment.torch_rank(), environment.world_size()
    local_rank, local_world = environment.local_rank(), environment.local_world_size()
    if torch.cuda.is_available():
        backend = "nccl"
        torch.cuda.set_device(local_rank)  # before NCCL starts: one device per process
    else:
        backend = "gloo"
        # what this rank was granted (Ray's CPUs, affinity, quota, OMP_NUM_THREADS), never the
        # host's core count: a rank of a 1-CPU Ray node on a big host would oversubscribe it
        torch.set_num_threads(rank_threads(local_world))
    bind_towards_rendezvous(os.environ)
    timeout = timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    locking = backend == "nccl" and environment.rank_lock_fd() is not None
    if locking:  # NCCL connects lazily: every connection at its communicator's start instead
        os.environ.setdefault("NCCL_RUNTIME_CONNECT", "0")
    _join(backend, timeout)
    control = dist.new_group(backend="gloo", timeout=timeout)
    if locking:
        dist.barrier(device_ids=[local_rank])  # the communicator starts now (not measured across GPU nodes)
    # Every connection of the groups is made (gloo's at once): a confined cluster rank's network
    # is now locked to them, before any of the user's code is imported (sandbox/rank_network.py).
    lock_network()
    return Dist(rank, world, local_rank, local_world, backend, control)


class JoinError(UserError):
    """The job's processes did not all meet within JOIN_TIMEOUT_S (the message says where; a
    UserError, so the job's error is that message and not a peer failure's)."""


def _join(backend: str, timeout: timedelta) -> None:
    """init_process_group, bounded by JOIN_TIMEOUT_S: a rank that cannot reach the rendezvous,
    or whose peers never come, fails with where it waited instead of hanging for the collective
    timeout. The group then takes the collective timeout."""
    try:
        dist.init_process_group(backend, timeout=timedelta(seconds=min(JOIN_TIMEOUT_S, COLLECTIVE_TIMEOUT_S)))
    except (RuntimeError, ValueError) as exc:
        where = environment.rendezvous()
        raise JoinError(f"the job's training processes could not meet at {where} within "
                        f"{JOIN_TIMEOUT_S:.0f} s: {first_sentence(exc)}") from exc
    # set_timeout is public from PyTorch 2.14; before it, the same call was private.
    c10d: Any = dist.distributed_c10d
    (getattr(c10d, "set_timeout", None) or c10d._set_pg_timeout)(timeout)


def teardown(d: Dist) -> None:
    """Leave the process group (after the last collective of every rank)."""
    if d.enabled and dist.is_initialized():
        dist.destroy_process_group()


# -- what crosses the process group -----------------------------------------------------------
def all_reduce_sum(tensor: torch.Tensor, d: Dist) -> torch.Tensor:
    """Sum ``tensor`` over all ranks, in place; returns it (unchanged when alone)."""
    if d.enabled and d.world_size > 1:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def sync_buffers(net: torch.nn.Module, d: Dist) -> None:
    """Rank 0's buffers (BatchNorm running statistics) on every rank.

    DDP broadcasts them at the start of each training forward, but that forward then updates
    them from each rank's own images, so the ranks end a step with slightly different ones.
    """
    if d.enabled and d.world_size > 1:
        for buffer in net.buffers():
            dist.broadcast(buffer, src=0)


def broadcast(obj: Any, d: Dist) -> Any:
    """Rank 0's ``obj`` on every rank (pickled over the gloo group; tensors on the CPU)."""
    if not d.enabled or d.world_size == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0, group=d.control)
    return box[0]


def gather(obj: Any, d: Dist) -> list:
    """Every rank's ``obj``, in rank order, on every rank: copies, as the pickles of a group are.

    Alone, a copy too: ``rng["ranks"] = gather(rng)`` must not put ``rng`` inside itself (a
    one-process DDP job's first checkpoint recursed until RecursionError).
    """
    if not d.enabled or d.world_size == 1:
        return [copy.deepcopy(obj)]
    out: list = [None] * d.world_size
    dist.all_gather_object(out, obj, group=d.control)
    return out


def rank_seed(seed: int, rank: int, *salt: int) -> int:
    """A seed for one rank derived from the run's seed (rank 0 of a fresh run keeps ``seed``)."""
    return int(np.random.SeedSequence([seed, rank, *salt]).generate_state(1)[0])


class StopAgreement:
    """``should_stop`` for a group of ranks: true on every rank at the same call, or on none.

    Each call starts a MAX all-reduce of this rank's wish (2: stop now, from its ``flag``; 1:
    stop at the next epoch boundary, from ``resize``, an elastic job's launcher asking for
    another size) over the gloo group and returns the result of the previous call's all-reduce
    (long finished by then: no waiting on other ranks' pace, and no device synchronisation);
    `resizing` says whether the ranks agreed on the second. Every rank must call it the same
    number of times, which the loop guarantees: after every optimizer step, and per validation
    batch up to the count every rank has (`BatchLoader.common_batches`).
    """

    def __init__(self, flag: Callable[[], bool], d: Dist, resize: Callable[[], bool] = lambda: False):
        self.flag, self.resize = flag, resize
        self.d = d
        self._value = torch.zeros(1, dtype=torch.int32)
        self._work: dist.Work | None = None
        self._level = 0  # agreed so far: 0 train on, 1 stop at the epoch boundary, 2 stop now

    def __call__(self) -> bool:
        if not self.d.enabled or self.d.world_size == 1:
            self._level = max(self._level, 2 if self.flag() else int(self.resize()))
            return self._level == 2
        if self._level == 2:
            return True
        self._collect()
        if self._level < 2:
            self._value.fill_(max(self._level, 2 if self.flag() else int(self.resize())))
            self._work = dist.all_reduce(self._value, op=dist.ReduceOp.MAX, group=self.d.control,
                                         async_op=True)
        return self._level == 2

    @property
    def resizing(self) -> bool:
        """The ranks agreed to stop at the next epoch boundary (an elastic job's new size)."""
        return self._level >= 1

    def _collect(self) -> None:
        if self._work is not None:
            self._work.wait()
            self._work = None
            self._level = max(self._level, int(self._value.item()))

    def close(self) -> None:
        """Finish the last all-reduce every rank started, before leaving the group."""
        self._collect()
