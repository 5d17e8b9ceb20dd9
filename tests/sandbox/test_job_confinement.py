"""What the sandbox reads from a job's spec.json (sandbox/job.py): user code or not, the
folders it may read and whether it may reach TCP, from any spec; never unconfined by accident."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainyard.core.errors import InvalidInput
from trainyard.sandbox import job as job_confinement
from trainyard.sandbox import policy as sandbox
from trainyard.sandbox.job import ConfinedJob, confined_command, read_spec, training_policy


def job_folder(tmp_path: Path, spec: object) -> Path:
    folder = tmp_path / "home" / "jobs" / "m1"
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps(spec))
    return folder


def test_a_custom_networks_policy_reads_its_dataset_and_weights_and_writes_its_folder(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    weights = tmp_path / "w" / "tuned.pt"
    folder = job_folder(tmp_path, {"kind": "model", "network_source": "def build(): ...", "dataset_dir": str(data),
                                   "pretrained": str(weights), "processes": 1, "nnodes": 1, "cluster": None})
    job = read_spec(folder)
    assert job.is_user_code and not job.on_cluster
    policy = training_policy(job, folder, 0, {})
    assert policy.read == [str(tmp_path / "home" / "weights"), str(folder / "spec.json"), str(data),
                           str(tmp_path / "w")]
    assert policy.write == [str(folder), "/dev/shm"] and policy.hidden == [str(tmp_path / "home")]
    assert policy.network is False  # one process: no rendezvous to reach


@pytest.mark.parametrize("fields, gpus", [({"processes": 2}, 0), ({"nnodes": 2}, 0), ({}, 2),
                                          ({"cluster": {"workers": 2}}, 0)])
def test_a_job_that_spans_processes_may_reach_tcp(fields, gpus):
    assert ConfinedJob(**fields).spans_processes(gpus)


def test_an_older_or_other_kinds_spec_reads_at_the_defaults(tmp_path):
    older = read_spec(job_folder(tmp_path, {"network": "lenet", "processes": None, "cluster": {}, "gone": 1}))
    assert not older.is_user_code and not older.on_cluster and not older.spans_processes(1)
    assert read_spec(tmp_path / "nowhere") == ConfinedJob()  # no spec (yet): nothing to confine
    assert confined_command(["python", "x.py"], tmp_path / "nowhere", []) == ["python", "x.py"]


def test_a_spec_of_the_wrong_shape_is_refused_not_run_unconfined(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "require", lambda: True)
    folder = job_folder(tmp_path, {"network_source": "def build(): ...", "processes": "many"})
    with pytest.raises(InvalidInput, match="processes"):
        job_confinement.confined_command(["python", "x.py"], folder, [])
