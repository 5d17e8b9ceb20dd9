"""Processes that only wait, list or serve never import torch (or anything else heavy).

torch costs seconds and hundreds of MB to import; the job processes that compute import it
themselves. Each case runs in a fresh interpreter and reports which heavy modules it loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import make_image_folder

HEAVY = ("torch", "torchvision", "onnxruntime", "onnx", "timm")

CLI = """
import json, sys
from trainyard.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "heavy": [m for m in HEAVY if m in sys.modules]}), file=sys.stderr)
"""

SERVER = """
import json, sys
from fastapi.testclient import TestClient
from trainyard.settings import get_settings
from trainyard.web.app import create_app
# The network-table warm-up imports torch in a thread after start-up by design (issue 15): left
# out here, so this checks that start-up and the job, dataset and page requests stay light.
app = create_app(get_settings(), warm_networks=False)
with TestClient(app, headers={"Authorization": f"Bearer {app.state.auth_token}"}) as client:
    codes = [client.get(path).status_code for path in ("/api/jobs", "/api/datasets", "/api/models", "/")]
print(json.dumps({"code": 0 if set(codes) == {200} else codes, "heavy": [m for m in HEAVY if m in sys.modules]}),
      file=sys.stderr)
"""


def _run(code: str, args: list[str], home: Path, roots: Path, heavy: tuple[str, ...] = HEAVY) -> dict:
    env = {**os.environ, "TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(roots),
           "TRAINYARD_AUTH_TOKEN": ""}
    env.pop("TRAINYARD_FAKE_GPUS", None)
    done = subprocess.run([sys.executable, "-c", f"HEAVY = {heavy!r}\n{code}", *args], env=env,
                          capture_output=True, text=True, timeout=300)
    answer = json.loads(done.stderr.strip().splitlines()[-1])
    if "--json" in args:
        answer["stdout"] = json.loads(done.stdout)
    return answer


def test_jobs_list_dataset_create_train_and_the_server_stay_light(tmp_path):
    home, roots = tmp_path / "home", tmp_path / "data"
    folder = make_image_folder(roots / "pets")
    created = _run(CLI, ["dataset", "create", "--name", "pets", "--train-folder", str(folder), "--size", "16x16",
                         "--json"], home, roots)
    assert created["code"] == 0 and created["heavy"] == []  # the build ran (in its job process) and finished
    # The job process trains with torch; the command that created the job and waits for it does not.
    trained = _run(CLI, ["train", "--dataset", created["stdout"]["id"], "--network", "lenet", "--epochs", "1",
                         "--json"], home, roots)
    assert trained["code"] == 0 and trained["heavy"] == []
    assert trained["stdout"]["jobs"][0]["status"] == "done"
    # Queued, the job is checked first: the network is built in a child process, not in the CLI.
    queued = _run(CLI, ["train", "--dataset", created["stdout"]["id"], "--network", "lenet", "--submit", "--json"],
                  home, roots)
    assert queued["code"] == 0 and queued["heavy"] == []
    assert queued["stdout"]["jobs"][0]["status"] == "queued"
    assert _run(CLI, ["jobs", "list"], home, roots) == {"code": 0, "heavy": []}
    assert _run(SERVER, [], home, roots) == {"code": 0, "heavy": []}


def test_dataset_create_waits_for_its_build_without_numpy_or_pillow(tmp_path):
    """The command only waits: decoding is its job process's work (issue 14, ~0.2 s of start-up)."""
    home, roots = tmp_path / "home", tmp_path / "data"
    folder = make_image_folder(roots / "pets")
    created = _run(CLI, ["dataset", "create", "--name", "pets", "--train-folder", str(folder), "--size", "16x16",
                         "--json"], home, roots, heavy=("numpy", "PIL", "rich.progress"))
    assert created["code"] == 0 and created["heavy"] == []
    assert created["stdout"]["status"] == "done"  # the build ran, in its job process
