"""``batch_size: auto`` and out-of-memory retries (training/auto_batch.py, training/oom_retry.py).

Out of memory is simulated on the CPU by TRAINYARD_INJECT_OOM, which the training process reads
(a job run through the job manager inherits it); no GPU is needed.
"""

from __future__ import annotations

import json

import pytest
import torch
from model_helpers import make_dataset, model_spec
from typer.testing import CliRunner

from trainyard.core.events import EventWriter, read_events
from trainyard.core.paths import JobFolder
from trainyard.training.auto_batch import CPU_MAX_BATCH, cpu_estimate, largest_fitting
from trainyard.training.loop import train
from trainyard.training.state import TrainingError


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=96, val=32, size=20)


def fits_up_to(largest: int, tried: list[int]):
    def probe(batch: int) -> None:
        tried.append(batch)
        if batch > largest:
            raise torch.OutOfMemoryError(f"{batch} > {largest}")
    return probe


def test_the_search_finds_the_largest_batch_that_fits():
    tried: list[int] = []
    assert largest_fitting(fits_up_to(37, tried), 8, 1000) == 37
    assert tried[:4] == [8, 16, 32, 64]  # doubled, then bisected between 32 and 64
    assert largest_fitting(fits_up_to(5, []), 64, 1000) == 5  # halved down from a start too large
    assert largest_fitting(fits_up_to(10_000, []), 8, 300) == 300  # capped
    assert largest_fitting(fits_up_to(0, []), 8, 300) == 0  # not even one image


def test_the_cpu_estimate_divides_the_memory_by_a_measured_images_bytes():
    per_image = 1_000_000
    batch = cpu_estimate(lambda b: 5_000_000 + b * per_image, available=8 * 10**9, processes=2, limit=10**6)
    assert batch == int(8 * 10**9 * 0.5 / 2 // (2 * per_image))  # a share of it, twice the activations
    assert cpu_estimate(lambda b: b * per_image, available=8 * 10**9, processes=1, limit=CPU_MAX_BATCH) == 256
    assert cpu_estimate(lambda b: b * 10**12, available=10**9, processes=1, limit=64) == 1


def run(spec, job_dir):
    with EventWriter(job_dir) as events:
        return train(spec, job_dir, events)


def test_auto_chooses_a_batch_and_says_so(dataset, tmp_path):
    result = run(model_spec(dataset, batch_size="auto", epochs=1), tmp_path)
    [summary] = [e for e in read_events(tmp_path / "events.jsonl", {"summary"}) if "batch_size" in e]
    assert 1 <= summary["batch_size"] <= 96 // 4  # a quarter of the training images at most
    log = (tmp_path / "log.txt").read_text()
    assert f"batch size auto: {summary['batch_size']} images per batch" in log
    assert f"batches of {summary['batch_size']}" in log and result["epoch"] == 1


def test_out_of_memory_halves_the_batch_and_the_job_goes_on(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINYARD_INJECT_OOM", "3")
    result = run(model_spec(dataset, batch_size=16, epochs=3, lr={"policy": "fixed", "base_lr": 0.05}), tmp_path)
    [change] = read_events(tmp_path / "events.jsonl", {"batch_size"})
    assert (change["old"], change["new"], change["base_lr"]) == (16, 8, 0.025)
    assert "out of memory at a batch of 16: continuing at a batch of 8, base LR 0.025" in \
        (tmp_path / "log.txt").read_text()
    lrs = [e["value"] for e in read_events(tmp_path / "events.jsonl", {"metric"}) if e["name"] == "lr"]
    assert lrs[-1] == 0.025
    assert result["val_accuracy"] > 90  # it learned on: the steps before were kept


def test_a_batch_of_one_that_does_not_fit_fails_with_what_to_try(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINYARD_INJECT_OOM", "2x10")  # the retried step fails again and again
    with pytest.raises(TrainingError, match="out of memory even at a batch of 1 image: try a smaller network"):
        run(model_spec(dataset, batch_size=4, epochs=1), tmp_path)
    changes = [(e["old"], e["new"]) for e in read_events(tmp_path / "events.jsonl", {"batch_size"})]
    assert changes == [(4, 2), (2, 1)]


def test_a_real_job_with_auto_and_an_out_of_memory_ends_done(settings, cli_env, monkeypatch):
    """Through the CLI and the job manager: the job's JSON says the batch it trained with."""
    from tests.conftest import make_image_folder
    from trainyard.cli.main import app

    folder = make_image_folder(settings.data_roots[0] / "colours", {"cat": 24, "dog": 24}, size=(16, 16))
    env = {**cli_env, "TRAINYARD_INJECT_OOM": "2"}
    made = CliRunner().invoke(app, ["dataset", "create", "--name", "c", "--train-folder", str(folder),
                                    "--size", "16x16", "--json"], env=env)
    assert made.exit_code == 0, made.output
    dataset = json.loads(made.stdout)["id"]
    result = CliRunner().invoke(app, ["train", "--dataset", dataset, "--network", "lenet", "--epochs", "2",
                                      "--batch-size", "auto", "--json"], env=env)
    assert result.exit_code == 0, result.output
    [job] = json.loads(result.stdout)["jobs"]
    assert job["status"] == "done" and job["spec"]["batch_size"] == "auto"
    folder = JobFolder(settings.home / "jobs" / job["id"])
    [change] = read_events(folder.events, {"batch_size"})
    assert "out of memory at a batch of" in folder.log.read_text()
    assert job["batch_size"] == change["new"] == change["old"] // 2
    assert job["summary"]["batch_size"] == job["batch_size"]


def test_after_halving_the_lr_policy_runs_over_the_new_step_count(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINYARD_INJECT_OOM", "2")
    lr = {"policy": "step", "step_percent": 50, "gamma": 0.1, "base_lr": 0.02}
    run(model_spec(dataset, batch_size=16, epochs=2, lr=lr, val_interval=0.5), tmp_path)
    lrs = [(e["epoch"], e["value"]) for e in read_events(tmp_path / "events.jsonl", {"metric"}) if e["name"] == "lr"]
    # halved to 0.01, then a tenth of it from half of training on (the new step count's points)
    assert all(value == pytest.approx(0.01) for epoch, value in lrs if 0.2 < epoch < 1)
    assert lrs[-1][1] == pytest.approx(0.02 / 2 * 0.1**2), lrs  # the policy's end (100 %: a second step)
    assert any(value == pytest.approx(0.001) for epoch, value in lrs if 1 < epoch < 2), lrs


def test_auto_is_a_batch_size_for_requests_and_sweeps_and_bad_ones_get_one_error():
    from trainyard.jobs.kinds.training import TrainRequest
    from trainyard.training.train_settings import TrainSettings

    request = TrainRequest(name="s", datasets=["d"], batch_sizes=["auto", 8], settings={"batch_size": "auto"})
    assert request.batch_sizes == ["auto", 8] and request.settings.batch_size == "auto"
    with pytest.raises(ValueError, match="Input should be a whole number of images or 'auto'") as info:
        TrainSettings(batch_size="big")
    assert info.value.error_count() == 1
