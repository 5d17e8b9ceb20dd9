"""A custom network's multi-process training runs in the sandbox: torch.distributed.run, its
rendezvous over TCP on localhost and both ranks."""

from __future__ import annotations

import pytest
from test_distributed import dataset, ddp_spec, launch, statuses, write_job  # noqa: F401

from trainyard.core.paths import JobFolder
from trainyard.jobs.kinds.registry import get_kind
from trainyard.jobs.runs.sandbox import sandboxed
from trainyard.jobs.store.confinement import Confinement
from trainyard.sandbox import policy as sandbox

pytestmark = [pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock"),
              pytest.mark.slow]


def test_a_custom_network_trains_sandboxed_in_two_processes(dataset, tmp_path):  # noqa: F811 (the fixture)
    """torch.distributed.run, its rendezvous over TCP and its two ranks all run in the sandbox."""
    source = ("from torch import nn\n"
              "def build(num_classes, in_channels, image_size):\n"
              "    return nn.Sequential(nn.Flatten(), nn.LazyLinear(num_classes))\n")
    job = write_job(tmp_path / "job", ddp_spec(dataset, network=None, network_source=source, epochs=1))
    # What the server records when it creates such a job (jobs/store/confinement.py): user code,
    # its dataset to read, two processes that meet over loopback.
    recorded = Confinement(user_code=True, reads=[str(dataset)], processes=2)
    command = sandboxed(get_kind("model").command(JobFolder(job), []), JobFolder(job), [], recorded)
    assert command[1:3] == ["-m", "trainyard.sandbox.supervisor"]
    out, _ = (proc := launch(job, command=command)).communicate(timeout=600)
    assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    assert statuses(job)[-1]["status"] == "done"
