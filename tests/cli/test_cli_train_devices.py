"""``trainyard train`` device options: --gpus / --gpu-ids / --processes, --scale-lr, and
--nnodes / --node-rank / --master, as they reach the job's needs and spec (queued, not run)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.core.files import read_json
from trainyard.jobs.context import open_context


def queue(settings, cli_env, *args, fake_gpus=0):
    ctx = open_context(settings)
    dataset = ctx.manager.create("dataset", "d", {}, needs={"pool": "dataset"})  # queued is enough
    env = {**cli_env, "TRAINYARD_FAKE_GPUS": str(fake_gpus)}
    result = CliRunner().invoke(app, ["train", "--dataset", dataset.id, "--network", "lenet", "--submit",
                                      "--json", *args], env=env)
    return ctx, result


def said(result) -> str:
    return " ".join(result.output.split())  # the message as one line, however it was wrapped


def test_processes_nodes_and_scale_lr_reach_the_spec(settings, cli_env):
    ctx, result = queue(settings, cli_env, "--processes", "2", "--scale-lr", "--nnodes", "2",
                        "--node-rank", "1", "--master", "10.0.0.1:29500")
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)["jobs"][0]
    spec = read_json(ctx.manager.folder(job["id"]).spec)
    assert (spec["processes"], spec["scale_lr"], spec["nnodes"], spec["node_rank"], spec["master"]) == \
        (2, True, 2, 1, "10.0.0.1:29500")
    assert ctx.store.get_job(job["id"]).needs == {"pool": "cpu"}


def test_gpu_requests_on_a_fake_inventory(settings, cli_env):
    ctx, result = queue(settings, cli_env, "--gpu-ids", "3,1", fake_gpus=4)
    assert result.exit_code == 0, result.output
    assert ctx.store.get_job(json.loads(result.stdout)["jobs"][0]["id"]).needs == {"pool": "gpu", "ids": [1, 3]}
    _, result = queue(settings, cli_env, "--gpus", "5", fake_gpus=4)
    assert result.exit_code == 2 and "5 GPUs asked for, this machine has 4" in said(result)


def test_contradictory_device_options_are_refused(settings, cli_env):
    _, result = queue(settings, cli_env, "--processes", "2", "--gpus", "1", fake_gpus=2)
    assert result.exit_code == 2 and "on GPUs one process runs per GPU" in said(result)
    _, result = queue(settings, cli_env, "--nnodes", "2", "--node-rank", "2", "--master", "h:1")
    assert result.exit_code == 2 and "node_rank 2 is not below nnodes 2" in said(result)
    _, result = queue(settings, cli_env, "--nnodes", "2")
    assert result.exit_code == 2 and "needs master (HOST:PORT of node 0)" in said(result)
    _, result = queue(settings, cli_env, "--nnodes", "2", "--master", "nohost")
    assert result.exit_code == 2 and "should be HOST:PORT" in said(result)
