"""`trainyard train` with nothing but a dataset and epochs (issue 46, points 4 and 11): the task's
recommended network is trained and named (a line on stderr, the job's ``network``), and a
fractional --epochs reads back as given in the CLI's JSON and in ``GET /api/jobs/ID``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.conftest import open_client
from trainyard.cli.main import app
from trainyard.core.files import write_json_atomic
from trainyard.jobs.context import open_context
from trainyard.networks.recommend import DatasetFacts, recommended_network


def submit(settings, cli_env, spec: dict, info: dict | None = None, *args: str):
    ctx = open_context(settings)
    dataset = ctx.manager.create("dataset", "shapes", spec, needs={"pool": "dataset"})  # queued is enough
    if info is not None:  # what a finished build reports
        folder = ctx.manager.folder(dataset.id).dataset
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / "info.json", info)
    result = CliRunner().invoke(app, ["train", "--dataset", dataset.id, "--epochs", "1.5", "--submit",
                                      "--json", *args], env=cli_env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["jobs"][0], " ".join(result.stderr.split())


def test_without_a_network_the_recommended_one_trains_and_is_named(settings, cli_env):
    job, said = submit(settings, cli_env, {}, {"task": "classification", "width": 64, "height": 64,
                                               "images": {"train": 400, "val": 100}})
    expected = recommended_network("classification", DatasetFacts(images=400, width=64, height=64))
    assert job["network"] == expected
    assert f"training {expected}, the recommended classification network for 400 training images, 64x64" in said
    digits, _ = submit(settings, cli_env, {}, {"width": 28, "height": 28, "images": {"train": 60000}})
    assert digits["network"] == "lenet"  # MNIST-sized images: DIGITS's LeNet
    boxes, said = submit(settings, cli_env, {"name": "b", "task": "detection", "train_folder": "/nowhere"})
    assert boxes["network"] == "yolo_n" and "recommended detection network" in said


def test_a_yolo_trains_by_its_recipe_under_what_the_user_sets(settings, cli_env):
    boxes = {"name": "b", "task": "detection", "train_folder": "/nowhere"}
    job, _ = submit(settings, cli_env, boxes, None, "--network", "yolo_n")
    spec = _written(settings, job["id"])
    assert spec["solver"] == "adamw" and spec["ema"] > 0 and spec["augment"]["mosaic"] > 0
    assert spec["lr"]["policy"] == "cosine" and spec["lr"]["warmup_percent"] > 0
    told, _ = submit(settings, cli_env, boxes, None, "--network", "yolo_n", "--solver", "sgd", "--lr", "0.05",
                     "--mosaic", "0")
    spec = _written(settings, told["id"])
    assert spec["solver"] == "sgd" and spec["augment"]["mosaic"] == 0  # the user's word over the recipe's
    assert spec["lr"]["base_lr"] == 0.05 and spec["lr"]["policy"] == "cosine"  # the rest of the panel kept
    plain, _ = submit(settings, cli_env, {}, None, "--network", "lenet")
    assert _written(settings, plain["id"])["solver"] == "sgd"  # no recipe: the defaults, as before


def _written(settings, job_id: str) -> dict:
    from trainyard.jobs.kinds.registry import spec_as_written

    return spec_as_written(open_context(settings).manager.folder(job_id))


def test_fractional_epochs_read_back_as_given(settings, cli_env):
    job, _ = submit(settings, cli_env, {}, None, "--network", "lenet")
    assert job["epochs"] == 1.5
    with open_client(settings, run_scheduler=False) as client:
        answer = client.get(f"/api/jobs/{job['id']}")
    assert answer.status_code == 200, answer.text
    assert answer.json()["epochs"] == 1.5
