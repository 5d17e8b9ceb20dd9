"""A local job whose spec does not read as the sandbox needs it cannot start: the manager then
fails it ("could not start the job: ..."), where it used to stay running with no process."""

from __future__ import annotations

import pytest

from tests.sandbox.test_job_confinement import job_folder
from trainyard.core.paths import JobFolder
from trainyard.jobs.runs import runner
from trainyard.jobs.runs.sandbox import sandboxed
from trainyard.sandbox import policy as sandbox


def test_a_spec_of_the_wrong_shape_is_a_start_failure_not_an_escape(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "require", lambda: True)
    folder = JobFolder(job_folder(tmp_path, {"network_source": "def build(): ...", "processes": "many"}))
    with pytest.raises(PermissionError, match="processes"):
        sandboxed(["python", "x.py"], folder, None)
    # the launch raises it (an OSError, which JobManager._start turns into a failed job)
    with pytest.raises(PermissionError, match="processes"):
        runner.launch(["python", "-c", "pass"], folder, [], False)
