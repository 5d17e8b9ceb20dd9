"""The job entry point: statuses, clear failures with a traceback in log.txt, and its imports."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from model_helpers import make_dataset, metrics, model_spec, statuses, write_job

from trainyard.core.paths import checkpoint_name
from trainyard.training.run import main


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=32, val=8, size=16)


def test_a_job_runs_to_done(dataset, tmp_path):
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=1))
    assert main(job) == 0
    assert [(s["status"], s["error"]) for s in statuses(job)] == [("running", None), ("done", None)]
    assert len(metrics(job, "val_accuracy")) == 1
    assert (job / "checkpoints" / checkpoint_name(1)).is_file()
    # its thread count and why (issue 46, point 3: the machine's load at the start)
    assert re.search(r"\d+ CPU threads? \(\d+ CPU\(s\) granted, machine load [0-9.]+ on \d+ CPUs",
                     (job / "log.txt").read_text())


def test_a_finished_job_run_again_stays_done_without_training_again(dataset, tmp_path):
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=1))
    assert main(job) == 0
    assert main(job) == 0  # resumes at the final checkpoint: nothing left to do
    assert len(metrics(job, "val_accuracy")) == 1
    assert [s["status"] for s in statuses(job)] == ["running", "done", "running", "done"]


def test_divergence_fails_the_job_with_the_hint(dataset, tmp_path):
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=3, lr={"policy": "fixed", "base_lr": 1e6}))
    assert main(job) == 1
    error = statuses(job)[-1]["error"]
    assert statuses(job)[-1]["status"] == "failed"
    assert error.startswith("training diverged at epoch ") and "lower the learning rate (now 1e+06)" in error
    log = (job / "log.txt").read_text()
    assert "Traceback (most recent call last)" in log and "TrainingError" in log


def test_invalid_spec_and_missing_dataset_fail_clearly(dataset, tmp_path):
    job = tmp_path / "bad"
    job.mkdir()
    (job / "spec.json").write_text(json.dumps({"dataset_id": "d", "dataset_dir": "/x", "network": "lenet",
                                               "epochs": 0}))
    assert main(job) == 1
    assert "epochs: Input should be greater than 0" in statuses(job)[-1]["error"]

    missing = write_job(tmp_path / "missing", model_spec(tmp_path / "nowhere"))
    assert main(missing) == 1
    assert statuses(missing)[-1]["error"] == f"dataset ds1 is not built ({tmp_path / 'nowhere'} has no info.json)"


def test_custom_network_errors_point_at_the_line(dataset, tmp_path):
    source = ("from torch import nn\n"
              "def build(num_classes, in_channels, image_size):\n"
              "    return nn.Linearr(1, 2)\n")
    job = write_job(tmp_path / "job", model_spec(dataset, network=None, network_source=source))
    assert main(job) == 1
    assert statuses(job)[-1]["error"].startswith("custom network: line 3: AttributeError")


def test_the_training_process_imports_no_web_database_or_scheduler_code():
    code = ("import sys, trainyard.training.run, trainyard.training.loop, trainyard.artifact.checkpoint;"
            "print([m for m in sys.modules if m.split('.')[:2] in (['trainyard', 'web'], ['trainyard', 'jobs'],"
            " ['trainyard', 'cli']) or m.split('.')[0] in ('fastapi', 'sqlalchemy', 'uvicorn')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_custom_network_forward_errors_point_at_the_line(dataset, tmp_path):
    source = ("import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
              "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 2)\n"
              "    def forward(self, x):\n        return self.fc(x)\n"
              "def build(num_classes, in_channels, image_size):\n    return Net()\n")
    job = write_job(tmp_path / "job", model_spec(dataset, network=None, network_source=source))
    assert main(job) == 1
    assert statuses(job)[-1]["error"].startswith("custom network: line 8: RuntimeError: mat1 and mat2")


@pytest.mark.parametrize("error", ["WeightsMismatch", "NotWeights", "TrainingError", "CheckpointError"])
def test_a_user_error_of_any_kind_is_reported_by_its_message(error):
    """Every UserError found while training (weights that do not fit, a file that holds none...)
    fails the job with its own message, not as "WeightsMismatch: message" like a defect would."""
    from trainyard.artifact.checkpoint import CheckpointError
    from trainyard.networks.state_dicts import NotWeights
    from trainyard.training.run import _message
    from trainyard.training.state import TrainingError
    from trainyard.weights.fit import WeightsMismatch

    kinds = {"WeightsMismatch": WeightsMismatch, "NotWeights": NotWeights, "TrainingError": TrainingError,
             "CheckpointError": CheckpointError}
    assert _message(kinds[error]("fc.weight has shape [10, 84], the network's is [3, 84]")) == \
        "fc.weight has shape [10, 84], the network's is [3, 84]"
    assert _message(KeyError("fc")) == "KeyError: 'fc'"  # a defect keeps its type name
