"""Training that cannot learn says so (issue 46, point 2): chance-level accuracy, divergence and
overfitting are each logged once as a warning with what to try, and kept in the job's summary."""

from __future__ import annotations

import json

import pytest
from model_helpers import make_dataset, model_spec, write_job

from trainyard.training.diagnosis import diagnose
from trainyard.training.run import main


def points(*values: float, start: int = 1) -> list[list[float]]:
    return [[epoch, value] for epoch, value in enumerate(values, start)]


def test_each_rule_names_what_it_sees_and_what_to_try():
    collapsed = {"val_accuracy": points(50.0, 50.0, 50.0), "train_loss": points(1.06, 0.4, 0.01),
                 "val_loss": points(0.7, 0.9, 1.4)}
    found = {finding.rule: finding.text for finding in diagnose(collapsed, classes=2, base_lr=0.01)}
    assert set(found) == {"chance", "overfitting"}
    assert "chance level (50.0% with 2 classes" in found["chance"] and "--pretrained imagenet" in found["chance"]
    assert "memorises" in found["overfitting"] and "rose from 0.7 (epoch 1) to 1.4" in found["overfitting"]
    (diverging,) = diagnose({"train_loss": points(2.3, 40.0, 2400.0), "val_accuracy": points(15.0)}, 10, 0.06)
    assert diverging.rule == "diverging" and "lower learning rate (now 0.06" in diverging.text


def test_a_learning_run_has_nothing_said():
    learning = {"val_accuracy": points(40.0, 70.0, 90.0), "train_loss": points(1.0, 0.5, 0.2),
                "val_loss": points(0.9, 0.5, 0.3)}
    assert diagnose(learning, classes=2, base_lr=0.01) == []
    assert diagnose({"val_accuracy": points(50.0, 50.0)}, classes=2, base_lr=0.01) == []  # too soon to judge


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=32, val=16, size=16)


def test_a_run_that_cannot_learn_says_so_in_its_log_and_summary(dataset, tmp_path):
    # a learning rate too small to move the weights: accuracy stays at chance
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=3, lr={"policy": "fixed", "base_lr": 1e-9}))
    assert main(job) == 0
    log = (job / "log.txt").read_text()
    assert log.count("validation accuracy has stayed at chance level") == 1
    events = [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines()]
    summary = [e for e in events if e["type"] == "summary"][-1]
    assert any("chance level" in finding for finding in summary["diagnosis"])


def test_jobs_show_lists_the_findings():
    from trainyard.cli.job_text import _results

    lines = _results({"kind": "model", "summary": {"diagnosis": ["the training is diverging. Try ..."]}})
    assert any(line.split()[0] == "warning" and "diverging" in line for line in lines)
