"""A rank of a multi-node job whose network is user code reaches its own job's peers and nothing
else: on three namespace hosts (tests/cluster/netns.py) with PostgreSQL on the bridge and a
trainyard server on a worker host (a peer's own address), a custom network's forward() tries
the server's API port, Ray's GCS port and PostgreSQL's from each rank and records what it
reached; the job still trains with its peers to the end, and nothing was reached.

Needs root, ``ip netns`` and PostgreSQL's binaries (CI has them); skips with the reason elsewhere.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.cluster.netns import BRIDGE, HEAD, RAY_ENV, SUBNET, Hosts, address, ray_start, why_not
from tests.cluster.test_cluster_jobs import spec
from tests.cluster.test_netns_hosts import ALL, TOKEN, alive_hosts, final, queue, system
from tests.conftest import wait_for
from tests.postgres_server import Unavailable, start_server
from tests.training.model_helpers import make_dataset
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools
from trainyard.sandbox import policy as sandbox
from trainyard.settings import Settings

pytestmark = pytest.mark.slow

NETWORK = '''
import json, os, socket
from torch import nn

TARGETS = {targets!r}


class Probe(nn.Module):
    def __init__(self, features, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(features, num_classes))
        self.tried = False

    def forward(self, x):
        if not self.tried and os.environ.get("RANK"):  # a rank, training (not a check)
            self.tried = True
            reached = {{}}
            for name, (host, port) in TARGETS.items():
                try:
                    socket.create_connection((host, port), timeout=5).close()
                    reached[name] = "reached"
                except OSError as exc:
                    reached[name] = f"refused: {{exc}}"
            with open(f"reach-rank-{{os.environ['RANK']}}.json", "w") as f:
                json.dump(reached, f)
        return self.body(x)


def build(num_classes, in_channels, image_size):
    return Probe(in_channels * image_size * image_size, num_classes)
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = why_not()
    if why:
        pytest.skip(why)
    if not sandbox.status()["rank_network"]["held"]:
        pytest.skip(sandbox.status()["rank_network"]["reason"])
    root = tmp_path_factory.mktemp("netns-ranks")
    hosts, database = Hosts(root), None
    try:
        hosts.build()
        try:
            database = start_server(host=BRIDGE, trusted=f"{SUBNET}.0/24")
        except Unavailable as exc:
            pytest.skip(f"the PostgreSQL a rank must not reach needs PostgreSQL: {exc}")
        ray_start(hosts, "head")
        settings = Settings(home=root / "home", data_roots=[root], cluster="ray", database_url=database.new_database())
        hosts.start("server-w1", "w1",
                    [sys.executable, "-m", "trainyard.cli.main", "serve", "--host", address("w1"), "--port", "5000"],
                    {**RAY_ENV, "TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(root),
                     "TRAINYARD_DATABASE_URL": settings.database_url, "TRAINYARD_CLUSTER": "ray",
                     "RAY_ADDRESS": f"{HEAD}:6379", "OMP_NUM_THREADS": "1", "TRAINYARD_AUTH_TOKEN": TOKEN})
        ray_start(hosts, "w1", "w2")
        assert wait_for(lambda: alive_hosts("w1") == ALL, 150), (system("w1"), root)
        yield open_context(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[])), root, database.port
    finally:
        hosts.remove()
        if database is not None:
            database.stop()


def test_a_rank_reaches_its_peers_only_and_still_trains(cluster):
    ctx, root, postgres_port = cluster
    dataset = make_dataset(root / "stripes", train=32, val=8, size=8)
    targets = {"the server's API (on a peer's address)": (address("w1"), 5000),
               "Ray's GCS": (HEAD, 6379), "PostgreSQL": (BRIDGE, postgres_port)}
    job = queue(ctx, spec(dataset, workers=2, batch_size=8, epochs=2, network=None,
                          network_source=NETWORK.format(targets=targets)), "probe")
    job = final(ctx, job.id, timeout=300)
    folder = ctx.manager.folder(job.id)
    assert job.status == "done", (job.error, (folder.path / "output-rank-1.txt").read_text()[-2000:])
    for rank in (0, 1):  # both ranks trained and tried every door (in their work folder, their cwd)
        reached = json.loads((folder.work / f"reach-rank-{rank}.json").read_text())
        assert set(reached) == set(targets)
        assert all(r.startswith("refused") for r in reached.values()), (rank, reached)
