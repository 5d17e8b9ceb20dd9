"""Ctrl-C on a foreground ``trainyard dataset create`` aborts the build: the command says so and
exits 130, the job ends aborted and leaves no dataset behind.

The command runs as a real process, as a user's would: SIGINT lands wherever it is waiting for
the job (between polls, or in the wait for the job process to end).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

from tests.conftest import make_image_folder, wait_for
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.jobs.context import open_context


def _slow_folder(root, per_class: int):
    """Class folders of ``per_class`` copies of one large JPEG each: a build of a few seconds."""
    make_image_folder(root, {"cat": 1, "dog": 1}, size=(640, 480))
    for name in ("cat", "dog"):
        first = root / name / f"{name}_0.jpg"
        for i in range(1, per_class):
            shutil.copyfile(first, root / name / f"{name}_{i}.jpg")
    return root


def test_ctrl_c_aborts_the_build_and_exits_130(settings):
    folder = _slow_folder(settings.data_roots[0] / "pets", per_class=300)
    env = {**os.environ, "TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": ""}
    env.pop("TRAINYARD_FAKE_GPUS", None)
    command = subprocess.Popen(
        [sys.executable, "-m", "trainyard.cli.main", "dataset", "create", "--name", "pets", "--train-folder",
         str(folder), "--size", "256x256", "--encoding", "png"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        events = wait_for(lambda: next(settings.jobs_dir.glob("*/work/events.jsonl"), None), timeout=120)
        wait_for(lambda: any(json.loads(line).get("status") == "running" for line in events.read_text().splitlines()),
                 timeout=120)
        command.send_signal(signal.SIGINT)
        _, stderr = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == 130, stderr
    assert "aborted" in stderr
    [job] = open_context(settings).store.list_jobs(kind="dataset")
    assert job.status == Status.ABORTED
    folder = JobFolder(settings.jobs_dir / job.id).work
    assert not (folder / "dataset").exists() and not (folder / "dataset.tmp").exists()
