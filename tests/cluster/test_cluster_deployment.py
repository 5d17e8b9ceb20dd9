"""A foreground ``trainyard train`` or ``trainyard jobs resume`` from a shell without
TRAINYARD_CLUSTER, against a store whose server is in cluster mode, joins the cluster when
RAY_ADDRESS answers (issue 19 item 5): its ranks run on the cluster's nodes, not as a silent
local run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import make_image_folder
from trainyard.core.status import Status
from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.dataset import create_dataset_job
from trainyard.jobs.scheduling.deployment import record_backend

pytestmark = pytest.mark.slow


def _dataset(ctx, settings) -> str:
    folder = make_image_folder(settings.data_roots[0] / "colours", {"red": 12, "blue": 12})
    spec = DatasetSpec(name="colours", train_folder=str(folder), width=16, height=16, channels=3)
    dataset = ctx.manager.run_foreground(create_dataset_job(ctx, spec, foreground=True).id, poll_s=0.05)
    assert dataset.status == Status.DONE, dataset.error
    return dataset.id


def _cli(cli_env, *args: str) -> dict:
    """``trainyard ARGS --json`` from a shell without TRAINYARD_CLUSTER; its JSON."""
    env = {**os.environ, **cli_env}  # RAY_ADDRESS names the test cluster (conftest.py)
    env.pop("TRAINYARD_CLUSTER", None)
    command = subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args, "--json"],
                             env=env, capture_output=True, text=True, timeout=600)
    assert command.returncode == 0, command.stderr[-3000:]
    return json.loads(command.stdout)


def test_a_foreground_train_against_a_cluster_store_runs_on_the_cluster(settings, cli_env, ray_cluster):
    ctx = open_context(settings)
    dataset = _dataset(ctx, settings)
    record_backend(ctx.store, "ray")  # what the cluster-mode server did when it started
    [job] = _cli(cli_env, "train", "--dataset", dataset, "--network", "lenet", "--epochs", "1", "--batch-size", "4",
                 "--processes", "2")["jobs"]
    assert job["status"] == "done"
    assert ctx.store.get_job(job["id"]).needs == {"pool": "cluster", "device": "cpu", "count": 2}
    assert sorted(w["rank"] for w in job["workers"]) == [0, 1]  # placed by Ray
    assert len({w["node_id"] for w in job["workers"]}) == 2  # one per one-CPU node


def test_a_foreground_resume_against_a_cluster_store_runs_on_the_cluster(settings, cli_env, ray_cluster):
    """Before, ``jobs resume --processes 2`` from a plain shell trained here with torchrun."""
    ctx = open_context(settings)
    dataset = _dataset(ctx, settings)
    [job] = _cli(cli_env, "train", "--dataset", dataset, "--network", "lenet", "--epochs", "1",
                 "--batch-size", "4")["jobs"]  # no server has recorded a backend: it trains here
    assert job["status"] == "done" and ctx.store.get_job(job["id"]).needs == {"pool": "cpu"}
    record_backend(ctx.store, "ray")  # then a cluster-mode server starts on the store
    resumed = _cli(cli_env, "jobs", "resume", job["id"], "--processes", "2")
    assert resumed["status"] == "done"
    assert ctx.store.get_job(job["id"]).needs == {"pool": "cluster", "device": "cpu", "count": 2}
    assert len({w["node_id"] for w in resumed["workers"]}) == 2  # placed by Ray, one rank per node
