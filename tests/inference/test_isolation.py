"""User code never runs in the server process: classify, download and import of custom networks.

Each payload network is a small MLP whose build() first does something hostile: writes its
process id (and whether it can see the server's token) to a file, calls os._exit, or sleeps.
The test process is the server (TestClient), so its pid must never appear in the file, the
server must keep answering, and a hang must end in a 503 that says what happened.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import save
from torch import nn

from trainyard.artifact.checkpoint import save_checkpoint
from trainyard.core.paths import checkpoint_name
from trainyard.inference import worker_pool as workers

SIZE, CHANNELS, CLASSES = 8, 3, ["a", "b"]
TOKEN = "a-server-secret-that-user-code-must-not-see"

BUILD = """
import os
from torch import nn


def build(num_classes, in_channels, image_size):
{hostile}
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
"""


def payload(hostile: str) -> str:
    return BUILD.format(hostile="\n".join("    " + line for line in hostile.splitlines()))


def guarded_payload() -> str:
    """A network that refuses to build in this (the server's) process or beside the server's token:
    it can build only where it should, in a sandboxed child without secrets."""
    return payload(f"if os.getpid() == {os.getpid()} or os.environ.get('TRAINYARD_AUTH_TOKEN'):\n"
                   "    raise RuntimeError('built in the server, or beside its token')")


def benign_state() -> dict[str, torch.Tensor]:
    """The payloads' weights, made here without running any payload."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(CHANNELS * SIZE * SIZE, len(CLASSES))).state_dict()


PREPROCESS = {"width": SIZE, "height": SIZE, "channels": CHANNELS, "resize": "squash",
              "mean_mode": "none", "crop": None, "scale": "0..1"}


@pytest.fixture
def server(settings, client_for, monkeypatch):
    monkeypatch.setenv("TRAINYARD_AUTH_TOKEN", TOKEN)  # the token the server's environment holds
    # The server holds TOKEN in memory as its credential, which the client sends.
    with client_for(settings.model_copy(update={"auth_token": TOKEN}), run_scheduler=False) as client:
        assert client.headers["Authorization"] == f"Bearer {TOKEN}"
        yield client
    workers.POOL.close()


def custom_model(client, source: str) -> str:
    """A done model job whose one checkpoint holds ``source`` as its custom network."""
    manager = client.app.state.ctx.manager
    # Recorded as custom when created (jobs/store/confinement.py), as the server records a custom job.
    job = manager.create("model", "payload", {"kind": "model", "network_source": source}, needs={"pool": "cpu"})
    save_checkpoint(manager.folder(job.id).checkpoints / checkpoint_name(1), {
        "model": benign_state(), "network": None, "network_source": source, "classes": CLASSES,
        "image_size": SIZE, "epoch": 1, "spec": {}, "preprocess": {**PREPROCESS, "mean": None}})
    return job.id


def png() -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((SIZE, SIZE, 3), 128, np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def classify(client, model_id: str, **params):
    return client.post(f"/api/models/{model_id}/classify", params=params,
                       files={"images": ("x.png", png(), "image/png")})


def worker_pids() -> list[int]:
    return [w.child.pid for w in workers.POOL._workers.values()]


def test_classify_builds_a_custom_network_in_a_worker_never_in_the_server(server, tmp_path):
    model = custom_model(server, guarded_payload())
    first = classify(server, model)
    assert first.status_code == 200, first.text
    assert [p[0] for p in first.json()["results"][0]["predictions"]] in (CLASSES, CLASSES[::-1])
    pids = worker_pids()
    views = classify(server, model, visualize="true")
    assert views.status_code == 200, views.text
    layers = views.json()["results"][0]["visualization"]["layers"]
    assert [layer["type"] for layer in layers][:2] == ["Input", "Flatten"]
    assert len(pids) == 1 and worker_pids() == pids  # one worker per loaded model, reused


def test_a_network_that_kills_its_process_does_not_kill_the_server(server, tmp_path):
    model = custom_model(server, payload("os._exit(3)"))
    response = classify(server, model)
    assert response.status_code == 503
    assert "ended before it could build the network (exit code 3)" in response.json()["detail"]
    assert server.get("/api/jobs").status_code == 200


def test_a_network_that_hangs_is_stopped_with_a_clear_503(server, tmp_path, monkeypatch):
    monkeypatch.setattr(workers, "LOAD_TIMEOUT_S", 2.0)
    sleeper = guarded_payload().replace("    return nn", "    __import__('time').sleep(600)\n    return nn")
    model = custom_model(server, sleeper)
    started = []
    original = workers.Child.__init__

    def remember(self, *args, **kwargs):
        started.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(workers.Child, "__init__", remember)
    began = time.monotonic()
    response = classify(server, model)
    assert response.status_code == 503
    assert "did not build the network within 2 s" in response.json()["detail"]
    assert time.monotonic() - began < workers.START_TIMEOUT_S
    assert len(started) == 1 and not started[0].alive()  # the sleeping worker was killed, not left behind
    with pytest.raises(ProcessLookupError):
        os.killpg(-started[0].pid, 0)


def test_download_exports_a_custom_network_outside_the_server(server, tmp_path):
    model = custom_model(server, guarded_payload())
    response = server.get(f"/api/models/{model}/download")
    assert response.status_code == 200, response.text


def test_the_export_route_builds_a_custom_network_outside_the_server_and_as_onnx_only(server):
    model = custom_model(server, guarded_payload())
    response = server.post(f"/api/models/{model}/export", json={"format": "onnx"})
    assert response.status_code == 200, response.text
    assert server.get(response.json()["download"]).status_code == 200
    refused = server.post(f"/api/models/{model}/export", json={"format": "torchscript"})
    assert refused.status_code == 422 and "onnx only" in refused.json()["detail"]


def model_archive(source: str) -> bytes:
    """A downloaded-model archive, made by hand, whose network.py is ``source``."""
    mean = io.BytesIO()
    np.save(mean, np.zeros((SIZE, SIZE, CHANNELS), np.float32))
    return _tar({"network.py": source.encode(), "weights.safetensors": save(benign_state()),
                 "labels.txt": "".join(f"{c}\n" for c in CLASSES).encode(), "mean.npy": mean.getvalue(),
                 "preprocess.json": json.dumps({**PREPROCESS, "image_size": SIZE}).encode()})


def import_archive(client, source: str):
    return client.post("/api/models/import", files={"file": ("m.tar.gz", model_archive(source), "application/gzip")})


def test_import_checks_network_py_only_outside_the_server(server, tmp_path):
    response = import_archive(server, guarded_payload())
    assert response.status_code == 201, response.text
    answered = classify(server, response.json()["id"])  # the imported model answers from a worker
    assert answered.status_code == 200, answered.text


@pytest.mark.parametrize("hostile, reason", [
    ("os._exit(3)", "does not build: the check ended before it could answer (exit code 3)"),
    ("__import__('time').sleep(600)", "could not be checked: the check took longer than 2 s")])
def test_import_of_a_hostile_network_is_refused_and_the_server_lives(server, monkeypatch, hostile, reason):
    if "sleep" in hostile:  # else the whole check (starting Python, importing torch) may take longer
        monkeypatch.setattr(server.app.state.ctx.settings, "check_timeout_s", 2.0)
    response = import_archive(server, payload(hostile))
    assert response.status_code == 400
    assert f"network.py {reason}" in response.json()["detail"]
    assert server.get("/api/jobs").json()["jobs"] == []


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"model/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


PIPES = ("def kind(fd):\n    try:\n        return os.readlink(f'/proc/self/fd/{fd}')\n"
         "    except OSError:\n        return ''\n"
         "pipes = [int(fd) for fd in os.listdir('/proc/self/fd') if kind(fd).startswith('pipe:')]\n")


def forward_payload(hostile: str) -> str:
    """A network whose forward pass (in the worker, at classify time) runs ``hostile`` first."""
    body = "\n".join("        " + line for line in hostile.splitlines())
    return f"""
import os
from torch import nn


class Net(nn.Sequential):
    def forward(self, x):
{body}
        return super().forward(x)


def build(num_classes, in_channels, image_size):
    return Net(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
"""


@pytest.mark.parametrize("hostile, status, reason", [
    ("hog = bytearray(3 << 30)", 503, "more than the 1024 MiB of memory"),
    (PIPES + "for fd in pipes:\n    try:\n        for _ in range(1000):\n            os.write(fd, b'x' * (1 << 20))\n"
     "    except OSError:\n        pass", 503, "not its answer"),
    (PIPES + "for fd in pipes:\n    try:\n        os.write(fd, b'TY 2 40\\n{\"answer\": {\"results\": \"forged\"}}')\n"
     "    except OSError:\n        pass", 503, "not its answer"),
    ("os.write(1, b'TY 2 40\\n{\"answer\": {\"results\": \"forged\"}}')", 200, ""),
    ("[os.fork() or os._exit(0) for _ in range(150)]", 422, "PermissionError"),
])
def test_a_hostile_worker_is_refused_and_the_server_lives(server, monkeypatch, hostile, status, reason):
    monkeypatch.setenv("TRAINYARD_SANDBOX_MEMORY_MB", "1024")
    monkeypatch.setenv("TRAINYARD_INFERENCE_RUNTIME", "torch")  # the forward pass runs in PyTorch, in the worker
    model = custom_model(server, forward_payload(hostile))
    response = classify(server, model)
    assert response.status_code == status, response.text
    assert reason in response.text
    if status == 200:  # what the network wrote to fd 1 went to its stderr, not into the answer
        assert response.json()["results"][0]["predictions"]
    elif status == 503:
        assert not any(w.alive() for w in workers.POOL._workers.values())  # killed, nothing left serving
    assert server.get("/api/jobs").status_code == 200
