"""A foreground ``trainyard train`` lives and dies with its command (issue 19 item 6): SIGTERM or
SIGHUP aborts the training as Ctrl-C does (sent to the training process too: issue 46), and SIGKILL
of the command takes the training (and torchrun's ranks) with it; the row then ends interrupted, not "running" for good.

Real processes, as a user's: a CLI subprocess training a LeNet for far more epochs than the test
waits for, signalled once its training process runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from tests.conftest import make_image_folder, wait_for
from trainyard.core.status import Status
from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.dataset import create_dataset_job

pytestmark = pytest.mark.slow


@pytest.fixture
def dataset_id(settings) -> str:
    ctx = open_context(settings)
    folder = make_image_folder(settings.data_roots[0] / "colours", {"red": 12, "blue": 12})
    spec = DatasetSpec(name="colours", train_folder=str(folder), width=28, height=28, channels=3)
    job = ctx.manager.run_foreground(create_dataset_job(ctx, spec, foreground=True).id, poll_s=0.05)
    assert job.status == Status.DONE, job.error
    return job.id


def _train(settings, cli_env, dataset_id: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, **cli_env}
    env.pop("TRAINYARD_FAKE_GPUS", None)
    return subprocess.Popen(
        [sys.executable, "-m", "trainyard.cli.main", "train", "--dataset", dataset_id, "--network", "lenet",
         "--epochs", "10000", "--batch-size", "4", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _training_processes(settings, command: subprocess.Popen, workers: int = 1):
    """The job's row and its processes (the job process and what it started), once its
    ``workers`` training processes run."""
    ctx = open_context(settings)

    def started():
        assert command.poll() is None, command.communicate()
        jobs = ctx.store.list_jobs(kind="model")
        if not jobs or not jobs[0].pid or jobs[0].status != Status.RUNNING:
            return None
        try:
            top = psutil.Process(jobs[0].pid)
            tree = [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            return None
        ranks = [p for p in tree if "trainyard.training.run" in " ".join(_cmdline(p))]
        return (jobs[0], tree) if len(ranks) >= workers else None

    return wait_for(started, timeout=180, interval=0.3)


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def _all_gone(tree) -> bool:
    for proc in tree:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_aborts_the_training_like_ctrl_c(settings, cli_env, dataset_id, signum):
    command = _train(settings, cli_env, dataset_id)
    try:
        job, tree = _training_processes(settings, command)
        command.send_signal(signum)
        _, stderr = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == 128 + signum, stderr
    assert "aborted" in stderr
    assert open_context(settings).store.get_job(job.id).status == Status.ABORTED
    assert wait_for(lambda: _all_gone(tree), timeout=60)


@pytest.mark.parametrize("workers", [1, 2])
def test_sigkill_of_the_command_takes_its_training_with_it(settings, cli_env, dataset_id, workers):
    command = _train(settings, cli_env, dataset_id, "--processes", str(workers))
    try:
        job, tree = _training_processes(settings, command, workers)
        command.kill()
        command.communicate(timeout=60)
        # Today's bug: the training (torchrun and its ranks) re-parented to init and trained on.
        assert wait_for(lambda: _all_gone(tree), timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
    ctx = open_context(settings)
    ctx.manager.reap()  # what the next command or server tick does
    ended = ctx.store.get_job(job.id)
    assert ended.status == Status.FAILED and ended.error.startswith("interrupted"), ended.error
    assert ctx.store.leases() == {}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_to_the_training_process_aborts_it_with_its_checkpoints(settings, cli_env, dataset_id,
                                                                              signum):
    """`kill` of the training process itself (issue 46, point 12): it stops as an abort does, the
    command with it, and the snapshots written so far stay."""
    command = _train(settings, cli_env, dataset_id)
    ctx = open_context(settings)
    try:
        job, tree = _training_processes(settings, command)
        checkpoints = ctx.manager.folder(job.id).checkpoints
        assert wait_for(lambda: any(checkpoints.glob("epoch-*.pt")), timeout=120)
        rank = next(p for p in tree if "trainyard.training.run" in " ".join(_cmdline(p)))
        rank.send_signal(signum)
        _, stderr = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
    ended = ctx.store.get_job(job.id)
    assert ended.status == Status.ABORTED, (ended.error, stderr)
    assert command.returncode == 1 and "aborted" in stderr
    assert any(checkpoints.glob("epoch-*.pt"))
    assert wait_for(lambda: _all_gone(tree), timeout=60)
