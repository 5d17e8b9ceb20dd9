"""Data-parallel training (DDP with gloo on the CPU): the same global batches and losses as one
process, rank 0 alone reporting, two nodes on loopback, and resume on another process count.

Job-level runs go through the model kind's real command (torch.distributed.run) in subprocesses.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess

import numpy as np
import psutil
import pytest
import torch
from model_helpers import (
    make_dataset,
    metrics,
    model_spec,
    one_thread,
    statuses,
    write_job,
)

from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.core.events import read_events
from trainyard.core.paths import JobFolder, checkpoint_name
from trainyard.datasets.storage import open_split
from trainyard.jobs.kinds.registry import get_kind
from trainyard.training.data import BatchLoader
from trainyard.training.run import main

TOLERANCE = 1e-4  # float sums in another order (gradients averaged over ranks)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    # 21 validation images: shards of 11 and 10, so one rank has a batch more than the other.
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=96, val=21, size=16)


def ddp_spec(dataset, **overrides):
    fields = dict(epochs=2, batch_size=8, processes=2, snapshot_interval=0.5, val_interval=0.5,
                  lr={"policy": "step", "base_lr": 0.05, "step_percent": 50, "gamma": 0.1})
    return model_spec(dataset, **{**fields, **overrides})


def launch(job, gpu_ids=(), command=None) -> subprocess.Popen:
    """Start a model job the way the runner does: the model kind's own command, with the GPUs
    ``gpu_ids`` visible (none: the CPU)."""
    command = command or get_kind("model").command(JobFolder(job), list(gpu_ids))
    # PYTHONFAULTHANDLER: a rank that aborts, or hangs and is aborted by finish(), shows its stacks
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpu_ids)),
           "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen(command, cwd=job, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


def finish(proc: subprocess.Popen, timeout: float = 120) -> None:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # hung: where each rank was (faulthandler prints on SIGABRT)
        for rank in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                rank.send_signal(signal.SIGABRT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # the launcher waits on: its ranks said what they could
            proc.kill()
            out, _ = proc.communicate(timeout=30)
        raise AssertionError(f"still running after {timeout:.0f} s:\n{out.decode(errors='replace')[-20000:]}") from None
    # a rank's error is in the job's events and its rank-N.error, not always in its output
    folder = JobFolder(proc.args[-1])
    said = {f.name: f.read_text() for f in folder.work.glob("rank-*.error")}
    assert proc.returncode == 0, (statuses(folder.path)[-2:], said, out.decode(errors="replace")[-3000:])


def assert_close(a, b, what):
    assert [e for e, _ in a] == [e for e, _ in b], what
    assert np.allclose([v for _, v in a], [v for _, v in b], rtol=TOLERANCE, atol=TOLERANCE), (what, a, b)


# -- sharding ---------------------------------------------------------------------------------
def test_global_batches_of_n_ranks_are_the_batches_of_one_process(dataset):
    split = open_split(dataset, "train")
    single = BatchLoader(split, 24, train=True, seed=3)
    ranks = [BatchLoader(split, 8, train=True, seed=3, rank=r, world_size=3) for r in range(3)]
    assert [len(r) for r in ranks] == [len(single)] * 3 == [4] * 3
    for epoch in (0, 1):
        whole = single.order(epoch)
        shards = [r.order(epoch) for r in ranks]
        for i in range(len(single)):
            together = np.concatenate([s[i * 8:(i + 1) * 8] for s in shards])
            assert sorted(together) == sorted(whole[i * 24:(i + 1) * 24])


def test_validation_shards_count_every_image_once(dataset):
    split = open_split(dataset, "val")
    loaders = [BatchLoader(split, 4, rank=r, world_size=2) for r in range(2)]
    orders = [loader.order(0) for loader in loaders]
    assert sorted(np.concatenate(orders)) == list(range(21))
    assert [len(loader) for loader in loaders] == [3, 3] and [len(o) for o in orders] == [11, 10]
    odd = [BatchLoader(split, 10, rank=r, world_size=2) for r in range(2)]
    assert [len(loader) for loader in odd] == [2, 1]  # 11 and 10 images in batches of 10
    assert {loader.common_batches for loader in odd} == {1}  # where ranks may ask to stop


# -- whole jobs -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def one_process(dataset, tmp_path_factory):
    """The reference: one process with the global batch (16) of two processes of 8."""
    job = write_job(tmp_path_factory.mktemp("one") / "job", ddp_spec(dataset, batch_size=16, processes=1))
    with one_thread():
        assert main(job) == 0
    return job


@pytest.fixture(scope="module")
def two_processes(dataset, tmp_path_factory):
    job = write_job(tmp_path_factory.mktemp("two") / "job", ddp_spec(dataset))
    finish(launch(job))
    return job


def test_two_gloo_processes_reach_the_loss_of_one_process_with_the_same_global_batch(one_process, two_processes):
    for name in ("train_loss", "lr", "val_loss", "val_accuracy"):
        assert_close(metrics(two_processes, name), metrics(one_process, name), name)
    final = checkpoint_name(2)
    ours, reference = (load_checkpoint(j / "checkpoints" / final) for j in (two_processes, one_process))
    assert ours["model"].keys() == reference["model"].keys()  # no DDP "module." prefix
    for key, value in reference["model"].items():
        assert torch.allclose(ours["model"][key], value, rtol=TOLERANCE, atol=TOLERANCE), key
    assert ours["world_size"] == 2 and ours["global_batch"] == 16 and len(ours["rng"]["ranks"]) == 2


def test_rank_0_alone_writes_events_and_checkpoints(two_processes):
    assert [s["status"] for s in statuses(two_processes)] == ["running", "done"]  # not once per rank
    log = (two_processes / "log.txt").read_text()
    assert "2 processes (gloo, DDP)" in log and "batches of 16 (2 x 8 per process)" in log
    assert len(metrics(two_processes, "val_accuracy")) == 4
    assert not list(two_processes.glob("rank-*.error"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_nodes_on_loopback_train_one_job(dataset, tmp_path, one_process):
    """Two launches as nodes 0 and 1 (one process each), each with its own job, as two
    ``trainyard train --nnodes 2 --node-rank R`` would make them."""
    master = f"127.0.0.1:{free_port()}"
    jobs = [write_job(tmp_path / f"node{r}", ddp_spec(dataset, processes=1, nnodes=2, node_rank=r,
                                                      master=master, id=f"node{r}job"))
            for r in range(2)]
    procs = [launch(job) for job in jobs]
    try:
        for proc in procs:
            finish(proc)
    finally:  # one node failed: the other must not wait on for it past this test
        for proc in procs:
            proc.kill()
    node0, node1 = jobs
    assert_close(metrics(node0, "train_loss"), metrics(one_process, "train_loss"), "train_loss")
    assert [s["status"] for s in statuses(node0)] == ["running", "done"]
    assert (node0 / "checkpoints" / checkpoint_name(2)).is_file()
    # node 1's own job reports status and the same metrics; the checkpoints stay with rank 0
    assert [s["status"] for s in statuses(node1)] == ["running", "done"]
    assert metrics(node1, "val_accuracy") == metrics(node0, "val_accuracy")
    assert not (node1 / "checkpoints").exists()


def resume_from(two_processes, tmp_path, spec, epoch=1):
    job = write_job(tmp_path / "resumed", spec)
    (job / "checkpoints").mkdir()
    name = checkpoint_name(epoch)
    shutil.copy(two_processes / "checkpoints" / name, job / "checkpoints" / name)
    return job


def after(points, epoch):
    return [(e, v) for e, v in points if e > epoch]


def test_resume_on_one_process_with_the_same_global_batch_continues_exactly(dataset, tmp_path,
                                                                            two_processes, one_process):
    job = resume_from(two_processes, tmp_path, ddp_spec(dataset, batch_size=16, processes=1))
    with one_thread():
        assert main(job) == 0
    for name in ("train_loss", "lr", "val_loss", "val_accuracy"):
        assert_close(metrics(job, name), after(metrics(one_process, name), 1), name)


def test_resume_with_another_global_batch_continues_at_the_same_place(dataset, tmp_path, two_processes):
    # 2 x 8 images a step before, 1 x 8 now: twice the steps per epoch, LR policy by fraction
    job = resume_from(two_processes, tmp_path, ddp_spec(dataset, processes=1))
    with one_thread():
        assert main(job) == 0
    assert "instead of 16: continuing at epoch 1 of 24 iterations" in (job / "log.txt").read_text()
    lr = metrics(job, "lr")
    assert [e for e, _ in lr][:2] == [1.1667, 1.3333]  # 12 steps an epoch now (read every 2)
    before = dict(metrics(two_processes, "lr"))  # the LR policy is at the same fraction of training
    assert all(v == pytest.approx(before[e]) for e, v in lr if e in before) and lr[-1][0] == 2
    assert [e for e, _ in metrics(job, "val_accuracy")] == [1.5, 2]
    assert load_checkpoint(job / "checkpoints" / checkpoint_name(2))["iteration"] == 24


def test_a_rank_that_fails_fails_the_job_with_its_message(dataset, tmp_path):
    source = ("import os\nfrom torch import nn\n"
              "def build(num_classes, in_channels, image_size):\n"
              "    if os.environ['RANK'] == '1':\n"
              "        raise ValueError('only rank 1 breaks')\n"
              "    return nn.Sequential(nn.Flatten(), nn.LazyLinear(num_classes))\n")
    job = write_job(tmp_path / "job", ddp_spec(dataset, network=None, network_source=source))
    proc = launch(job)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0
    final = statuses(job)[-1]
    assert final["status"] == "failed", out.decode(errors="replace")[-3000:]
    assert final["error"] == "training process rank 1 failed: custom network: line 5: ValueError: only rank 1 breaks"


def test_scale_lr_multiplies_the_learning_rate_by_the_process_count_also_across_a_resume(dataset, tmp_path):
    from trainyard.core.events import EventWriter
    from trainyard.training.build_run import prepare
    from trainyard.training.distributed import Dist
    from trainyard.training.state import checkpoint_state

    spec = ddp_spec(dataset, processes=1, scale_lr=True, lr={"policy": "fixed", "base_lr": 0.05})
    two = Dist(rank=0, world_size=2)  # rank 0 of two, without a process group: no collectives here
    with EventWriter(tmp_path / "a") as events:
        run = prepare(spec, tmp_path / "a", events, d=two)
    assert run.base_lr == run.stepper.lr == pytest.approx(0.1)
    assert (run.global_batch, len(run.train_loader)) == (16, 6)
    ckpt = checkpoint_state(run, 1, 6)
    with EventWriter(tmp_path / "b") as events:
        resumed = prepare(spec, tmp_path / "b", events, ckpt)
    assert resumed.base_lr == resumed.stepper.lr == pytest.approx(0.05)  # one process now
    assert resumed.batches == 12 and resumed.schedule.total_batches == 24


# -- on GPUs (NCCL): skipped without them ------------------------------------------------------
def gpu_spec(dataset, **overrides):
    # fp32: bf16 rounding would swamp the comparison (TF32 and cuDNN still differ a little)
    return ddp_spec(dataset, processes=1, precision="fp32", **overrides)


@pytest.mark.parametrize("count", [pytest.param(1, marks=pytest.mark.requires_cuda(1)),
                                   pytest.param(2, marks=pytest.mark.requires_cuda(2))])
def test_nccl_ranks_reach_the_loss_of_one_gpu(dataset, tmp_path, count):
    """1: torch.distributed.run with one process (the DDP path on one GPU); 2: two GPUs."""
    from trainyard.jobs.kinds.registry import distributed_command

    one = write_job(tmp_path / "one", gpu_spec(dataset, batch_size=16))
    finish(launch(one, [0]))
    ddp = write_job(tmp_path / "ddp", gpu_spec(dataset, batch_size=16 // count))
    command = distributed_command("trainyard.training.run", JobFolder(ddp), count)
    finish(launch(ddp, list(range(count)), command=command))
    assert "(nccl, DDP)" in (ddp / "log.txt").read_text()
    for name in ("train_loss", "val_loss"):
        a, b = metrics(ddp, name), metrics(one, name)
        assert np.allclose([v for _, v in a], [v for _, v in b], rtol=1e-2, atol=1e-2), name  # TF32, cuDNN


@pytest.mark.requires_cuda(2)
def test_a_killed_nccl_rank_ends_the_job_within_a_bounded_time(dataset, tmp_path):
    import time

    import psutil

    job = write_job(tmp_path / "job", gpu_spec(dataset, epochs=2000))
    proc = launch(job, [0, 1])
    events = job / "events.jsonl"
    deadline = time.monotonic() + 120
    while not (events.exists() and '"type":"metric"' in events.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None, "no training in time"
        time.sleep(0.2)
    rank1 = next(p for p in psutil.Process(proc.pid).children(recursive=True) if p.environ().get("RANK") == "1")
    started = time.monotonic()
    rank1.kill()
    proc.wait(timeout=90)
    assert proc.returncode != 0 and time.monotonic() - started < 60


def test_ranks_agree_on_an_auto_batch_and_on_halving_when_one_runs_out_of_memory(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINYARD_INJECT_OOM", "3@1")  # rank 1 alone: rank 0 must not wait for it
    job = write_job(tmp_path / "job", ddp_spec(dataset, batch_size="auto", val_interval=1, snapshot_interval=1))
    finish(launch(job))
    events = JobFolder(job).events
    chosen = next(e["batch_size"] for e in read_events(events, {"summary"}) if "batch_size" in e)
    [change] = read_events(events, {"batch_size"})
    assert change["old"] == chosen and change["new"] == chosen // 2
    assert statuses(job)[-1]["status"] == "done"
