"""Ranges and --trials (jobs/kinds/sweeps.py): N combinations drawn from ranges, lists still a grid,
and one-line errors for ranges and trials that do not fit together."""

from __future__ import annotations

import math

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from trainyard.cli.main import app as cli
from trainyard.core.errors import InvalidInput
from trainyard.jobs.kinds.sweeps import check_ranges, combinations, parse_range
from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app


def test_trials_draw_log_uniform_rates_and_power_of_two_batch_sizes_the_same_way_each_time():
    drawn = list(combinations(["d"], ["lenet"], [], [], lr_range=(1e-4, 1e-1), batch_size_range=(16, 128),
                              trials=200, seed=3))
    assert len(drawn) == 200
    lrs, batches = [c[2] for c in drawn], [c[3] for c in drawn]
    assert all(1e-4 <= lr <= 1e-1 for lr in lrs) and all(16 <= b <= 128 and isinstance(b, int) for b in batches)
    # Log-uniform: about as many below the geometric middle (~3.2e-3) as above it; a uniform
    # draw would put 97 % above it.
    below = sum(lr < math.sqrt(1e-4 * 1e-1) for lr in lrs)
    assert 70 <= below <= 130
    assert set(batches) == {16, 32, 64, 128}  # powers of two, each drawn
    again = list(combinations(["d"], ["lenet"], [], [], lr_range=(1e-4, 1e-1), batch_size_range=(16, 128),
                              trials=200, seed=3))
    assert again == drawn


def test_a_batch_range_without_two_powers_of_two_is_drawn_log_uniformly():
    drawn = [c[3] for c in combinations(["d"], ["lenet"], [0.01], [], batch_size_range=(33, 60), trials=200, seed=1)]
    assert all(33 <= b <= 60 for b in drawn) and len(set(drawn)) > 15
    assert 60 <= sum(b < math.sqrt(33 * 60) for b in drawn) <= 140  # log-uniform: balanced around ~44.5


def test_a_list_beside_a_range_is_a_choice_and_lists_alone_a_grid():
    drawn = list(combinations(["d"], [None], [], [32, 64], lr_range=(1e-3, 1e-2), trials=20, seed=0))
    assert len(drawn) == 20 and {c[3] for c in drawn} == {32, 64}
    grid = list(combinations(["d"], [None], [0.1, 0.01], [32, 64]))
    assert [(c[2], c[3]) for c in grid] == [(0.1, 32), (0.1, 64), (0.01, 32), (0.01, 64)]


@pytest.mark.parametrize("lr_range, batch_range, trials, words", [
    ((1e-4, 1e-1), None, None, "say how many with trials"),
    (None, None, 5, "trials draws combinations from ranges"),
    ((0.1, 0.01), None, 5, "positive low to a higher high"),
    ((0.0, 0.01), None, 5, "positive low"),
    (None, (0, 8), 5, "from 1 or more"),
])
def test_ranges_and_trials_that_do_not_fit_are_refused(lr_range, batch_range, trials, words):
    with pytest.raises(InvalidInput, match=words):
        check_ranges(lr_range, batch_range, trials)


def test_parse_range():
    assert parse_range("1e-4..1e-1") == (1e-4, 1e-1)
    assert parse_range("16..128", int) == (16, 128)
    assert parse_range("0.1,0.01") is None
    with pytest.raises(InvalidInput, match="LOW..HIGH"):
        parse_range("16..lots", int, "--batch-size")


@pytest.fixture
def client(settings):
    app = create_app(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]), run_scheduler=False)
    ctx = app.state.ctx
    dataset = ctx.manager.create("dataset", "small", {"name": "small"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done", summary={"classes": ["a", "b"], "width": 28, "height": 28,
                                                            "channels": 3})
    with TestClient(app) as client:
        client.dataset_id = dataset.id
        yield client


@pytest.mark.slow  # the pre-check builds LeNet in a child process (imports torch)
def test_the_api_queues_one_job_per_trial_named_by_its_draw(client):
    answer = client.post("/api/models", json={
        "name": "search", "datasets": [client.dataset_id], "networks": ["lenet"], "lr_range": [1e-4, 1e-1],
        "batch_size_range": [16, 128], "trials": 4, "settings": {"seed": 7, "epochs": 2}})
    assert answer.status_code == 201, answer.text
    jobs = answer.json()["jobs"]
    assert len(jobs) == 4 and {j["group"] for j in jobs} == {"search"}
    for job in jobs:
        lr, batch = job["spec"]["lr"]["base_lr"], job["spec"]["batch_size"]
        assert 1e-4 <= lr <= 1e-1 and 16 <= batch <= 128
        assert job["name"] == f"search [lr={lr:g}, bs={batch}]"


def test_the_api_and_cli_refuse_a_range_without_trials_and_create_nothing(client, settings):
    answer = client.post("/api/models", json={"name": "s", "datasets": [client.dataset_id], "networks": ["lenet"],
                                              "lr_range": [1e-4, 1e-1]})
    assert answer.status_code == 422 and "trials" in answer.json()["detail"]
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": ""}
    for args, words in [(["--lr", "1e-4..1e-1"], "say how many with trials"),
                        (["--trials", "3"], "trials draws combinations from ranges"),
                        (["--batch-size", "16..x", "--trials", "3"], "--batch-size '16..x' should be a range"),
                        (["--lr", "0.1", "--early-stop"], "early stopping compares the runs of a sweep")]:
        result = CliRunner().invoke(cli, ["train", "--dataset", client.dataset_id, "--network", "lenet", *args],
                                    env=env)
        assert result.exit_code == 2 and words in result.stderr, result.output
    assert client.get("/api/models").json()["models"] == []


def test_a_grid_or_trials_over_the_cap_is_refused_naming_it_and_creates_nothing(client, settings):
    """A grid bomb: 2 datasets x 3 networks x 4 rates x 3 batch sizes = 72 jobs > 64."""
    grid = {"name": "bomb", "datasets": [client.dataset_id] * 2, "networks": ["lenet", "alexnet", "googlenet"],
            "base_lrs": [0.1, 0.01, 0.001, 0.0001], "batch_sizes": [8, 16, 32]}
    answer = client.post("/api/models", json=grid)
    assert answer.status_code == 422
    assert "72 jobs" in answer.json()["detail"] and "cap of 64" in answer.json()["detail"]
    drawn = client.post("/api/models", json={"name": "many", "datasets": [client.dataset_id],
                                             "networks": ["lenet"], "lr_range": [1e-4, 1e-1], "trials": 65})
    assert drawn.status_code == 422 and "cap of 64" in drawn.json()["detail"]
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": "", "TRAINYARD_MAX_SWEEP_JOBS": "3"}
    result = CliRunner().invoke(cli, ["train", "--dataset", client.dataset_id, "--network", "lenet",
                                      "--lr", "0.1,0.01", "--batch-size", "8,16"], env=env)
    assert result.exit_code == 2 and "makes 4 jobs, more than the cap of 3" in result.stderr, result.output
    assert client.get("/api/models").json()["models"] == []
