"""A cluster rank is confined as the server recorded its job, handed down by the launcher's
environment (sandbox/recorded.py), not as the job folder's spec.json says: the ranks'
own code writes that folder, and a rewritten spec must not free the next attempt's ranks."""

from __future__ import annotations

import json
import sys

from trainyard.core.paths import JobFolder
from trainyard.jobs.runs.runner import launch
from trainyard.jobs.store.confinement import Confinement
from trainyard.sandbox import job as job_confinement
from trainyard.sandbox import policy as sandbox
from trainyard.sandbox import recorded as recorded_confinement


def test_a_rank_is_confined_by_the_record_whatever_its_spec_says(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "require", lambda: True)
    job_dir = tmp_path / "home" / "jobs" / "c1"
    job_dir.mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (job_dir / "spec.json").write_text(json.dumps({"network": "lenet", "dataset_dir": str(tmp_path / "home")}))
    env = {recorded_confinement.VARIABLE: recorded_confinement.encode(True, [str(tmp_path / "data")], 1, 2, True)}
    job = recorded_confinement.confined_job(env)
    assert job is not None and job.is_user_code and job.on_cluster and job.nnodes == 2
    command = job_confinement.confined_command(["python", "-m", "x"], job_dir, [], env={}, job=job)
    assert command[1:3] == ["-m", "trainyard.sandbox.supervisor"], "the rank ran unconfined as its spec said"
    policy = sandbox.Policy.from_json(command[3])
    assert str(tmp_path / "home") not in policy.read and str(tmp_path / "data") in policy.read
    assert policy.network is True  # its ranks rendezvous over TCP, as recorded
    assert recorded_confinement.confined_job({}) is None  # an older launcher: the spec, as before


def test_the_server_hands_the_record_to_the_jobs_process(tmp_path):
    folder = JobFolder(tmp_path / "job")
    folder.path.mkdir()
    facts = Confinement(user_code=False, reads=["/data/x"], processes=1, nnodes=3, on_cluster=True)
    proc = launch([sys.executable, "-c", f"import os; print(os.environ[{recorded_confinement.VARIABLE!r}])"],
                  folder, None, facts)
    assert proc.wait(timeout=60) == 0
    assert json.loads((folder.output).read_text()) == {
        "user_code": False, "reads": ["/data/x"], "processes": 1, "nnodes": 3, "on_cluster": True}
