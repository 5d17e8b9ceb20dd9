"""The ranks of a cluster job whose network is user code run in the sandbox on their nodes: a
build() that reads the store from a rank fails the job with the rank's permission error, and
the ranks ran under their supervisor with the sandbox's memory limit and read, but could not
write, their job's fence; an abort still stops them."""

from __future__ import annotations

import pytest

from tests.cluster.test_cluster_jobs import ended, gone, spec, submit, tick_until, training_processes, wait_for_training
from tests.conftest import wait_for
from tests.training.model_helpers import make_dataset
from trainyard.sandbox import namespaces
from trainyard.sandbox import policy as sandbox

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock")]

NETWORK = '''
import json, os, resource
from torch import nn


def build(num_classes, in_channels, image_size):
    if os.path.isfile(os.path.join("..", "spec.json")):  # a rank, in the job's work folder (not a network check)
        limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
        with open(f"rank-{{os.environ.get('RANK')}}.limit", "w") as f:
            f.write(str(limit >> 20))
        fence = os.path.join("..", "fence", "fence.json")  # its job's fence: read, never written
        seen = "read" if json.load(open(fence)).get("attempt") == 0 else "unread"
        try:
            open(fence, "w").close()
        except OSError:
            seen += ", refused"
        with open(f"rank-{{os.environ.get('RANK')}}.fence", "w") as f:
            f.write(seen)
        open({store!r}, "rb").read()  # the server's store: out of a rank's reach
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
'''


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=16, val=8, size=8)


def test_a_rank_of_a_custom_network_cannot_read_the_store(cluster_ctx, dataset, settings, monkeypatch):
    monkeypatch.setenv("TRAINYARD_SANDBOX_MEMORY_MB", "3000")  # the launcher passes it on to its ranks' nodes
    store = settings.home / "trainyard.db"
    assert store.is_file()
    source = NETWORK.format(store=str(store))
    job = submit(cluster_ctx, spec(dataset, epochs=1, network=None, network_source=source), "boxed")
    job = tick_until(cluster_ctx, job.id, ended, timeout=300)
    assert job.status == "failed"
    # In namespaces the store is not in the rank's root at all; with Landlock alone it is refused.
    refused = "FileNotFoundError" if namespaces.available() else "PermissionError"
    assert refused in job.error and "trainyard.db" in job.error, job.error
    folder = cluster_ctx.manager.folder(job.id).work
    limits = sorted(p.read_text() for p in folder.glob("rank-*.limit"))
    assert limits == ["3000", "3000"]  # both ranks confined, with the memory limit
    assert [p.read_text() for p in folder.glob("rank-*.fence")] == ["read, refused"] * 2


def test_the_confined_ranks_of_a_custom_network_abort(cluster_ctx, dataset):
    """Abort reaches each rank's training process past its supervisor (its own process group)."""
    source = ("from torch import nn\n"
              "def build(num_classes, in_channels, image_size):\n"
              "    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))\n")
    job = submit(cluster_ctx, spec(dataset, epochs=500, network=None, network_source=source), "boxed")
    job = wait_for_training(cluster_ctx, job)
    ranks = training_processes(cluster_ctx.manager.folder(job.id).path)
    assert len(ranks) == 2
    cluster_ctx.manager.abort(job.id)
    wait_for(lambda: gone(ranks.values()), 60)
    assert tick_until(cluster_ctx, job.id, ended, timeout=120).status == "aborted"
    # said by rank 0's training process itself: it got the SIGTERM, it was not killed with its actor
    log = cluster_ctx.manager.folder(job.id).log.read_text()
    assert "aborted; the checkpoints written so far are kept" in log
