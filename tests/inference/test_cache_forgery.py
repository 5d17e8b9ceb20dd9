"""Files in a job folder decide nothing: a forged or stale cached export is ignored and rebuilt.

A custom network's job runs user code that can write its own folder, so the ``.onnx`` and
``.inputs.npz`` beside its checkpoint are the user's to forge. The server learns whether a
checkpoint is custom, and which cache files are its own, from the trust ledger (trust.py).
"""

from __future__ import annotations

import io
import json
import os

import numpy as np

from tests.inference.checkpoints import write_checkpoint
from tests.inference.test_isolation import CLASSES, classify, custom_model, guarded_payload, server  # noqa: F401
from trainyard.core.paths import checkpoint_name
from trainyard.inference import loader, ort_runtime, trust


def forge(checkpoint, network: str, classes: list[str]) -> None:
    """What a hostile build() writes beside its snapshot: inputs that say "standard network",
    and junk where the ONNX graph goes."""
    about = {"classes": classes, "epoch": 1, "network": network, "spec": {},
             "preprocess": {"width": 8, "height": 8, "channels": 3, "resize": "squash", "mean_mode": "none",
                            "crop": None, "scale": "0..1"}}
    buffer = io.BytesIO()
    np.savez(buffer, about=np.array(json.dumps(about)))
    ort_runtime.inputs_path(checkpoint).write_bytes(buffer.getvalue())
    ort_runtime.onnx_path(checkpoint).write_bytes(b"not an onnx graph" * 100)
    later = checkpoint.stat().st_mtime_ns + 10**9  # newer than the checkpoint: "fresh" by its times
    for path in (ort_runtime.inputs_path(checkpoint), ort_runtime.onnx_path(checkpoint)):
        os.utime(path, ns=(later, later))


def test_a_forged_cache_never_runs_a_custom_network_in_the_server(server, tmp_path):  # noqa: F811
    # The network raises if it is built in this (the server's) process: the right classes mean
    # it was built in a sandboxed worker only (a worker cannot write a file the test could read).
    model = custom_model(server, guarded_payload())
    snapshot = server.app.state.ctx.manager.folder(model).checkpoints / checkpoint_name(1)
    forge(snapshot, "lenet", ["forged-1", "forged-2"])
    response = classify(server, model)
    assert response.status_code == 200, response.text
    assert sorted(p[0] for p in response.json()["results"][0]["predictions"]) == sorted(CLASSES)
    forge(snapshot, "lenet", ["forged-1", "forged-2"])  # forged again after the server's verdict
    loader._cache.clear()
    again = classify(server, model)
    assert again.status_code == 200, again.text
    assert sorted(p[0] for p in again.json()["results"][0]["predictions"]) == sorted(CLASSES)


def test_a_forged_or_stale_cache_of_a_standard_network_is_rebuilt(tmp_path):
    job = tmp_path / "home" / "jobs" / "j1" / "checkpoints"
    path = write_checkpoint(job / checkpoint_name(1), classes=("a", "b", "c"))
    loaded = loader.load_model(path, user_code=False)
    assert loaded.cpu_forward() is not None
    good = ort_runtime.onnx_path(path).read_bytes()
    assert (tmp_path / "home" / "trust" / f"{trust.digest(path)}.json").is_file()  # outside the job folder
    loader._cache.clear()
    forge(path, "lenet", ["x", "y", "z"])
    again = loader.load_model(path, user_code=False)
    assert again.classes == ["a", "b", "c"]  # the checkpoint's, not the forged inputs'
    assert again.cpu_forward() is not None
    assert ort_runtime.onnx_path(path).read_bytes() == good  # junk replaced by a fresh export
    assert ort_runtime.is_cached(path)
