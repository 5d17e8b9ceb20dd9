"""A training job whose network is user code has limits: a build() that takes far more memory than
its processes may have, or that starts process after process, ends the job ``failed`` with one
line that says so; the processes it started are gone, and the process that launched it (the
server's runner, here the test) is untouched."""

from __future__ import annotations

import os

import pytest

from tests.conftest import wait_for
from tests.training.model_helpers import make_dataset, model_spec, write_job
from trainyard.core.paths import JobFolder
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.runs import runner
from trainyard.jobs.store.confinement import Confinement, facts_of
from trainyard.sandbox import cgroups, job_bounds
from trainyard.sandbox import job as job_confinement
from trainyard.sandbox import policy as sandbox

pytestmark = [pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock"),
              pytest.mark.slow]

NETWORK = '''
import os, time
from torch import nn


def build(num_classes, in_channels, image_size):
    if os.path.isfile("spec.json"):  # the job's own folder: the job, not the network check
{payload}
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
'''
HOARD = "        hoard = bytearray(16 << 30)  # 16 GiB, touched page by page\n"
FORKS = '''        with open("pidns.txt", "w") as f:
            f.write(os.readlink("/proc/self/ns/pid"))
        for _ in range(64):
            pid = os.fork()
            if pid == 0:
                time.sleep(600)
                os._exit(0)
            with open("children.txt", "a") as f:
                f.write(f"{pid}\\n")
        time.sleep(600)
'''



def recorded(spec) -> Confinement:
    """What the server records for such a job at its creation (jobs/store/confinement.py)."""
    return facts_of("model", spec.model_dump(mode="json"))

@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=16, val=8, size=8)


def run_job(tmp_path, dataset, payload: str) -> tuple[str, str | None, JobFolder]:
    """Launch the job as the server's runner does; its final status and error once it ended."""
    spec = model_spec(dataset, network=None, network_source=NETWORK.format(payload=payload), epochs=1)
    folder = JobFolder(write_job(tmp_path / "home" / "jobs" / "limited", spec))
    proc = runner.launch(get_kind("model").command(folder, []), folder, [], recorded(spec))
    assert proc.args[1:3] == ["-m", "trainyard.sandbox.supervisor"]
    proc.wait(timeout=600)
    status, error = runner.final_status(folder, proc.returncode, abort_requested=False)
    return status, error, folder


def test_a_network_over_its_memory_limit_fails_the_job_saying_so(tmp_path, dataset, monkeypatch):
    monkeypatch.setenv("TRAINYARD_SANDBOX_MEMORY_MB", "1536")
    status, error, folder = run_job(tmp_path, dataset, HOARD)
    assert status == "failed", (folder.output).read_text()[-2000:]
    assert error == ("the network used more than 1.5 GiB of memory, the most a training process running "
                     "user code may take (TRAINYARD_SANDBOX_MEMORY_MB)")


def test_a_network_that_starts_process_after_process_is_stopped(tmp_path, dataset, monkeypatch):
    monkeypatch.setattr(job_confinement, "JOB_PROCESSES", 16)
    status, error, folder = run_job(tmp_path, dataset, FORKS)
    assert status == "failed", (folder.output).read_text()[-2000:]
    assert error == ("the network started more than 16 processes, the most a training job running user "
                     "code may have; they were stopped")
    children = [int(line) for line in (folder.path / "children.txt").read_text().split()]
    assert len(children) >= 16
    # The pids are the job's PID namespace's, where it has one: what must be gone is every
    # process of that namespace (without one, of the host's, it is the same test).
    namespace = (folder.path / "pidns.txt").read_text()
    alive = []
    for pid in (children if namespace == os.readlink("/proc/self/ns/pid") else _pids()):
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") == namespace:
                alive.append(pid)
        except OSError:
            pass
    assert alive == []


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def test_a_confined_job_still_aborts(tmp_path, dataset):
    """Abort is SIGTERM to the job's process group: the training process (not its supervisor,
    which waits for it) stops at a step boundary, and the job ends ``aborted``."""
    spec = model_spec(dataset, network=None, network_source=NETWORK.format(payload="        pass\n"), epochs=500)
    folder = JobFolder(write_job(tmp_path / "home" / "jobs" / "aborted", spec))
    proc = runner.launch(get_kind("model").command(folder, []), folder, [], recorded(spec))
    def trained_or_ended():
        return proc.poll() is not None or (folder.events.exists() and '"type":"metric"' in folder.events.read_text())

    wait_for(trained_or_ended, 600, interval=0.5)
    assert proc.poll() is None, (folder.output).read_text()[-2000:]
    runner.terminate_group(proc.pid, 30, proc)
    assert runner.final_status(folder, proc.returncode, abort_requested=True)[0] == "aborted"
    assert proc.returncode == 143


THREADS = '''        import threading
        threading.stack_size(64 << 10)
        for _ in range(1100):
            threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        time.sleep(600)
'''
FILLS = '''        for n in range(32):
            with open(f"filler-{n}.bin", "wb") as f:
                f.write(os.urandom(8 << 20))
        time.sleep(600)
'''


@pytest.mark.parametrize("group", ["cgroup", "none"])
def test_a_network_that_starts_thread_after_thread_is_stopped(tmp_path, dataset, monkeypatch, group):
    """Threads are tasks of the machine's pid_max too: at most 4 x 256 here, and never more than
    a quarter of the machine's; a cgroup's pids.max refuses the next one, and without a cgroup
    the supervisor counts them (they were not counted at all)."""
    if group == "none":
        monkeypatch.setenv(cgroups.SETTING, "0")
    elif cgroups.unavailable_reason():
        pytest.skip(f"no cgroup here: {cgroups.unavailable_reason()}")
    monkeypatch.setattr(job_confinement, "JOB_PROCESSES", 4)
    limit = job_bounds.task_limit(4)
    assert limit <= job_bounds.machine_tasks() // 4
    status, error, folder = run_job(tmp_path, dataset, THREADS)
    assert status == "failed", (folder.output).read_text()[-2000:]
    assert error == (job_bounds.over_tasks(limit) if group == "none" else
                     "custom network: line 11: RuntimeError: can't start new thread")


def test_a_network_that_fills_its_work_folder_is_stopped(tmp_path, dataset, monkeypatch):
    monkeypatch.setenv(job_bounds.WORK_SETTING, "64")
    status, error, folder = run_job(tmp_path, dataset, FILLS)
    assert status == "failed", (folder.output).read_text()[-2000:]
    assert error == job_bounds.over_work(64)
    assert job_bounds.folder_bytes(folder.work) < 512 << 20
