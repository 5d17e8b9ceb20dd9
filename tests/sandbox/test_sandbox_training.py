"""A training job whose network is user code runs sandboxed: it trains, writing its own folder,
while its build() cannot read the store or write it, another job's folder or the server's token."""

from __future__ import annotations

import json

import pytest

from trainyard.core.paths import JobFolder
from trainyard.sandbox import namespaces
from trainyard.sandbox import policy as sandbox

pytestmark = [pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock"),
              pytest.mark.slow]

NETWORK = '''
import json, os
from torch import nn


def attempt(f):
    try:
        f()
        return "allowed"
    except OSError as exc:
        return type(exc).__name__


def build(num_classes, in_channels, image_size):
    if os.path.basename(os.getcwd()) == "work":  # the check runs elsewhere: only the job probes
        home = "{home}"
        seen = {{
            "read store": attempt(lambda: open(os.path.join(home, "trainyard.db"), "rb").read()),
            "write store": attempt(lambda: open(os.path.join(home, "trainyard.db"), "ab").write(b"x")),
            "other job": attempt(lambda: open(os.path.join(home, "jobs", "{other}", "work", "log.txt"),
                                              "a").write("x")),
            "own spec": attempt(lambda: open(os.path.join("..", "spec.json"), "a").write("x")),
            "token": os.environ.get("TRAINYARD_AUTH_TOKEN", "absent"),
            "database url": os.environ.get("TRAINYARD_DATABASE_URL", "absent"),
        }}
        if os.path.isfile(os.path.join("..", "spec.json")):  # its own work folder (its working directory)
            with open("probe.json", "w") as f:
                json.dump(seen, f)
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
'''


def test_a_custom_network_trains_confined_to_its_job_folder(settings, client_for, make_images, wait_job,
                                                               monkeypatch):
    monkeypatch.setenv("TRAINYARD_AUTH_TOKEN", "a-token-the-job-must-not-see")
    monkeypatch.setenv("TRAINYARD_DATABASE_URL", "")
    images = make_images(settings.data_roots[0] / "pets", {"cat": 6, "dog": 6}, size=(16, 16))
    with client_for(settings.model_copy(update={"auth_token": "a-token-the-job-must-not-see"})) as client:
        dataset = client.post("/api/datasets", json={"name": "pets", "train_folder": str(images),
                                                     "width": 8, "height": 8, "val_percent": 25})
        assert dataset.status_code == 201, dataset.text
        assert wait_job(client, dataset.json()["id"], 240)["status"] == "done"
        other = dataset.json()["id"]
        source = NETWORK.format(home=settings.home, other=other)
        model = client.post("/api/models", json={"name": "boxed", "datasets": [other], "network_source": source,
                                                 "settings": {"epochs": 1}})
        assert model.status_code == 201, model.text
        job = wait_job(client, model.json()["jobs"][0]["id"], 600)
    assert job["status"] == "done", job["error"]
    folder = JobFolder(settings.home / "jobs" / job["id"])
    seen = json.loads((folder.work / "probe.json").read_text())
    # In namespaces the store is not there at all; with Landlock alone it is there but refused.
    hidden = "FileNotFoundError" if namespaces.available() else "PermissionError"
    # its spec is the server's (EACCES to the dropped uid), bound read-only (EROFS) or outside Landlock's writes
    assert seen.pop("own spec") in ("PermissionError", "OSError")
    assert seen == {"read store": hidden, "write store": "PermissionError", "other job": "PermissionError",
                    "token": "absent", "database url": "absent"}
    assert folder.checkpoints.is_dir()

