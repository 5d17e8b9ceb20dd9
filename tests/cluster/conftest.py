"""A real multi-node Ray cluster on this machine, started once per test session: a head with no
CPU (nothing is placed there) and two nodes of one CPU each, all on 127.0.0.1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import trainyard
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools

NODE_ARGS = {"object_store_memory": 80 * 2**20, "node_ip_address": "127.0.0.1"}


@pytest.fixture(scope="session")
def ray_env():
    """The environment the tests' Ray clusters and launchers need; restored at the end."""
    saved = {k: os.environ.get(k) for k in ("RAY_ADDRESS", "PYTHONPATH", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
                                            "RAY_USAGE_STATS_ENABLED", "OMP_NUM_THREADS")}
    os.environ.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0", OMP_NUM_THREADS="1")
    # The nodes' workers import trainyard from this tree, whatever the venv's install points at.
    src = str(Path(trainyard.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, saved["PYTHONPATH"]) if p)
    # Imported after RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which Ray reads at import: with it, Ray
    # keeps 127.0.0.1 instead of swapping in this machine's address, where nothing listens.
    pytest.importorskip("ray", reason="cluster mode needs the cluster extra: pip install trainyard[cluster]")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def ray_cluster(ray_env):
    """The cluster; RAY_ADDRESS names it for the launchers the tests' job managers start."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, **NODE_ARGS})
    nodes = [cluster.add_node(num_cpus=1, **NODE_ARGS) for _ in range(2)]
    cluster.wait_for_nodes()
    os.environ["RAY_ADDRESS"] = cluster.address
    try:
        yield cluster, nodes
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()


@pytest.fixture
def cluster_ctx(settings, ray_cluster):
    """A job manager in cluster mode on the session's cluster."""
    settings = settings.model_copy(update={"cluster": "ray", "abort_grace_s": 10.0})
    return open_context(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]))
