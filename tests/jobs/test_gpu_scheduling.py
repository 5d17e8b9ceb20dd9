"""The GPU scheduler on a fake inventory of four GPUs: allocation, waiting, release after abort and
crash, no double lease between a foreground command and the server; and multi-GPU model jobs
(DDP over gloo on this CPU) that abort on every rank, fail promptly when a rank dies, and resume
on another GPU count.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import torch

from tests.conftest import tick_until, wait_for
from tests.jobs.test_gpu_leases import four_gpus
from tests.jobs.test_hardware import FakeNVML
from tests.training.model_helpers import make_dataset, metrics, model_spec
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.registry import JobKind, register_kind
from trainyard.jobs.kinds.resume_model import resume_model_job
from trainyard.jobs.scheduling.resources import GPU, Pools, fake_gpus, gpu_inventory

REPO = Path(__file__).resolve().parents[2]

# A job that records the GPUs it was given (CUDA_VISIBLE_DEVICES), then sleeps or crashes.
SCRIPT = """
import os, sys, time, signal
from trainyard.core.events import EventWriter
w = EventWriter(sys.argv[1])
w.status("running")
w.emit("devices", visible=os.environ.get("CUDA_VISIBLE_DEVICES"), order=os.environ.get("CUDA_DEVICE_ORDER"))
signal.signal(signal.SIGTERM, lambda *a: (w.status("aborted"), sys.exit(0)))
if "{mode}" == "crash":
    sys.exit(3)
time.sleep(float("{seconds}"))
w.status("done")
"""


@dataclass(frozen=True)
class GpuScript(JobKind):
    mode: str = "hold"
    seconds: float = 60

    def command(self, folder, gpu_ids):
        return [sys.executable, "-c", SCRIPT.format(mode=self.mode, seconds=self.seconds), str(folder.work)]


register_kind(GpuScript("gpu-hold", "", lambda job, folder: {}))
register_kind(GpuScript("gpu-crash", "", lambda job, folder: {}, mode="crash"))


@pytest.fixture
def gpu_ctx(settings):
    return open_context(settings, pools=Pools(2, 1, fake_gpus(4)))


# Slow tests that exercise processes more than the store run once (on SQLite): a quick suite.
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def make(ctx, kind, **needs):
    return ctx.manager.create(kind, kind, {}, needs={"pool": "gpu", **needs})


def visible(ctx, job_id):
    path = ctx.manager.folder(job_id).events
    return wait_for(lambda: next((json.loads(line)["visible"] for line in path.read_text().splitlines()
                                  if '"devices"' in line), None) if path.exists() else None, 30)


def test_jobs_get_next_free_or_exact_gpus_wait_and_get_them_after_abort_and_crash(gpu_ctx):
    ctx = gpu_ctx
    a = make(ctx, "gpu-hold", count=2)
    assert tick_until(ctx, a.id, {"running"}).summary["resources"] == ["gpu:0", "gpu:1"]
    # the runner shows the job its leased GPUs only, by UUID (fake ones: no real device behind)
    assert visible(ctx, a.id) == "GPU-fake-0,GPU-fake-1"

    exact = make(ctx, "gpu-hold", ids=[1, 2])
    three = make(ctx, "gpu-hold", count=3)
    crash = make(ctx, "gpu-crash", count=1)
    ctx.manager.tick()
    holder = f"job {a.id} (gpu-hold {a.name})"
    for job, what in ((exact, "GPUs 1, 2"), (three, "3 GPUs")):
        job = ctx.store.get_job(job.id)
        assert (job.status, job.status_detail) == ("waiting", f"waiting for {what}: {holder} holds them")
    assert tick_until(ctx, crash.id, {"failed"}).error.endswith("(exit code 3); see its log")
    assert set(ctx.store.leases()) == {"gpu:0", "gpu:1"}  # the crashed job's GPU is free again

    ctx.manager.abort(a.id)
    assert tick_until(ctx, exact.id, {"running"}).summary["resources"] == ["gpu:1", "gpu:2"]
    assert visible(ctx, exact.id) == "GPU-fake-1,GPU-fake-2"
    assert ctx.store.get_job(three.id).status == "waiting"  # 0 and 3 are free: not enough
    ctx.manager.abort(exact.id)
    assert tick_until(ctx, three.id, {"running"}).summary["resources"] == ["gpu:0", "gpu:1", "gpu:2"]
    assert [h.status for h in ctx.store.history(exact.id)] == ["queued", "waiting", "running", "aborted"]
    ctx.manager.abort(three.id)
    assert ctx.store.leases() == {}


def test_a_server_on_gpus_2_and_3_runs_its_gpu_0_on_physical_gpu_2(settings, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(four_gpus()))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    ctx = open_context(settings, pools=Pools(2, 1, gpu_inventory))
    job = make(ctx, "gpu-hold", ids=[0])
    assert tick_until(ctx, job.id, {"running"}).summary["resources"] == ["gpu:0"]
    assert visible(ctx, job.id) == "GPU-2222-physical"
    assert '"order":"PCI_BUS_ID"' in ctx.manager.folder(job.id).events.read_text()
    ctx.manager.abort(job.id)


FOREGROUND = """
import sys
from tests.jobs.test_gpu_scheduling import GpuScript
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.registry import register_kind
register_kind(GpuScript("gpu-brief", "", lambda job, folder: {{}}, "hold", {seconds}))
ctx = open_context()  # TRAINYARD_FAKE_GPUS=4, as the server's
job = ctx.manager.create("gpu-brief", "cli", {{}}, needs={{"pool": "gpu", "count": 2}}, foreground=True)
print(ctx.manager.run_foreground(job.id).status, flush=True)
"""


@sqlite_only  # on PostgreSQL, test_leases and test_shared_store race real processes instead
def test_a_foreground_command_and_the_server_never_share_a_gpu(settings, cli_env):
    # The tree's own trainyard (src) before any installed one: the command runs this checkout's code.
    env = {**os.environ, **cli_env, "TRAINYARD_FAKE_GPUS": "4", "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'src'}"}
    settings = settings.model_copy(update={"fake_gpus": 4})
    server = open_context(settings)  # the inventory comes from the same setting
    assert [g.name for g in server.pools.gpus] == ["Fake GPU (testing)"] * 4
    cli = subprocess.Popen([sys.executable, "-c", FOREGROUND.format(seconds=4)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: server.store.leases(), 30)
    taken = server.store.leases()
    assert sorted(taken) == ["gpu:0", "gpu:1"]
    three = make(server, "gpu-hold", count=3)
    two = make(server, "gpu-hold", count=2)
    server.manager.tick()
    assert server.store.get_job(three.id).status == "waiting"
    assert tick_until(server, two.id, {"running"}).summary["resources"] == ["gpu:2", "gpu:3"]
    out, errors = cli.communicate(timeout=60)
    assert out.strip() == "done", errors[-2000:]
    server.manager.abort(two.id)
    assert tick_until(server, three.id, {"running"}).summary["resources"] == ["gpu:0", "gpu:1", "gpu:2"]
    server.manager.abort(three.id)


# -- multi-GPU model jobs (two processes on this CPU with gloo) --------------------------------
needs_cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="fake GPUs must not map to real ones")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=64, val=16, size=16)


@pytest.fixture(autouse=True)
def one_thread_per_job(monkeypatch):
    # Jobs inherit it (runner.launch): OpenMP threads fighting over a busy CPU slow them 3x.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def model_job(ctx, dataset, epochs=20, **needs):
    spec = model_spec(dataset, epochs=epochs, batch_size=8, snapshot_interval=1, val_interval=1)
    return ctx.manager.create("model", "ddp", spec.model_dump(mode="json"), needs={"pool": "gpu", **needs})


def ranks(job) -> dict[int, psutil.Process]:
    """The job's worker processes by rank (children of torch.distributed.run)."""
    found = {}
    for proc in psutil.Process(job.pid).children(recursive=True):
        try:
            found[int(proc.environ()["RANK"])] = proc
        except (KeyError, psutil.Error):
            continue
    return found


def wait_training(ctx, job, what="metric"):
    events = ctx.manager.folder(job.id).events
    wait_for(lambda: events.exists() and f'"type":"{what}"' in events.read_text(), 60)
    ctx.manager.tick()


@sqlite_only
def test_a_model_job_given_a_gpu_cuda_cannot_use_fails_at_once_naming_the_cause(settings, dataset):
    # A GPU as NVML would list it, whose UUID no CUDA here finds (on a machine without GPUs,
    # none at all): the job must fail, not train on the CPU while it holds the lease.
    ctx = open_context(settings, pools=Pools(2, 1, [GPU(0, "Stand-in GPU", 16 * 2**30, "GPU-0000-stand-in")]))
    job = tick_until(ctx, model_job(ctx, dataset, epochs=1, count=1).id, {"failed", "done"}, timeout=120)
    assert job.status == "failed"
    assert job.error.startswith("this job was given gpu:0 but cannot use CUDA: ")
    assert "rather than run on the CPU" in job.error
    assert '"type":"metric"' not in ctx.manager.folder(job.id).events.read_text()  # never trained
    assert ctx.store.leases() == {}


@needs_cpu_only
@sqlite_only
def test_abort_stops_every_rank_and_resume_continues_on_another_gpu_count(gpu_ctx, dataset):
    ctx = gpu_ctx
    job = tick_until(ctx, model_job(ctx, dataset, count=2).id, {"running"})
    wait_training(ctx, job, "checkpoint")
    workers = ranks(job)
    assert sorted(workers) == [0, 1]
    job = ctx.manager.abort(job.id)
    assert job.status == "aborted" and ctx.store.leases() == {}
    wait_for(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in workers.values()), 10)
    folder = ctx.manager.folder(job.id)
    assert '"status":"aborted"' in folder.events.read_text()

    resumed = resume_model_job(ctx, job.id, gpus=1)  # one GPU now: one plain process
    assert resumed.needs == {"pool": "gpu", "count": 1}
    done = tick_until(ctx, job.id, {"done", "failed"}, timeout=120)
    assert done.status == "done", done.error
    log = folder.log.read_text()
    assert "global batch of 8 images (1 process(es) x 8) instead of 16" in log
    assert metrics(folder.path, "val_accuracy")[-1][0] == 20


@needs_cpu_only
@sqlite_only
def test_a_killed_rank_fails_the_job_within_a_bounded_time(gpu_ctx, dataset):
    ctx = gpu_ctx
    job = tick_until(ctx, model_job(ctx, dataset, epochs=400, count=2).id, {"running"})
    wait_training(ctx, job)
    workers = ranks(job)
    workers[1].send_signal(signal.SIGKILL)
    job = tick_until(ctx, job.id, {"failed", "done", "aborted"}, timeout=60)  # raises past the bound
    assert job.status == "failed"
    assert "another training process of this job stopped" in job.error and "Rank 0 saw" in job.error
    assert ctx.store.leases() == {}
    wait_for(lambda: not workers[0].is_running() or workers[0].status() == psutil.STATUS_ZOMBIE, 10)


def test_without_a_driver_the_inventory_never_waits_for_torch(monkeypatch):
    """The first Create of a server waited for the start-up thread's torch import to learn there
    is no GPU (issue 31.3): torch in sys.modules (perhaps half imported) is not asked without a driver."""
    from trainyard.jobs.scheduling import resources

    class HalfImported:
        class cuda:
            @staticmethod
            def is_available():
                pytest.fail("no driver: torch.cuda must not be asked")

    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: the torch fallback
    monkeypatch.setitem(sys.modules, "torch", HalfImported)
    monkeypatch.setattr(resources, "_cuda_driver_present", lambda: False)
    assert gpu_inventory() == []
