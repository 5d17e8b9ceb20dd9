"""`compile` on: a compiled network trains through a validation and a checkpoint on the CPU
(inductor, with the machine's C compiler), resumes, and its checkpoint exports like any other.

A compiled module (torch's OptimizedModule) has no truth value: `eval_model or model` raised
"LeNet does not support len()" at the first validation. Its state_dict keys carry
``_orig_mod.``; checkpoints save the plain network, so none may appear in one.
"""

from __future__ import annotations

import shutil
import tarfile

import pytest
import torch
from model_helpers import make_dataset, metrics, model_spec, one_thread

from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.core.events import EventWriter
from trainyard.core.paths import checkpoint_name
from trainyard.inference.export import export_model
from trainyard.training.loop import train


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "stripes", train=32, val=16, size=16)


def _train(spec, job_dir, **kwargs):
    with EventWriter(job_dir) as events, one_thread():
        return train(spec, job_dir, events, **kwargs)


@pytest.mark.slow  # torch.compile: inductor writes and g++ builds C++ (over a minute on 2 cores)
def test_compiled_training_validates_checkpoints_resumes_and_exports(dataset, tmp_path):
    spec = model_spec(dataset, epochs=2, compile=True, snapshot_interval=1, val_interval=1,
                      lr={"policy": "fixed", "base_lr": 0.05})
    result = _train(spec, tmp_path / "full")
    assert [e for e, _ in metrics(tmp_path / "full", "val_accuracy")] == [1, 2]
    assert result["epoch"] == 2 and "torch.compile on" in (tmp_path / "full" / "log.txt").read_text()
    first = load_checkpoint(tmp_path / "full" / "checkpoints" / checkpoint_name(1))
    assert first["model"] and not [k for k in first["model"] if "_orig_mod" in k]

    resumed = tmp_path / "resumed" / "checkpoints"
    resumed.mkdir(parents=True)
    shutil.copy(tmp_path / "full" / "checkpoints" / checkpoint_name(1), resumed)
    _train(spec, tmp_path / "resumed", resume=resumed / checkpoint_name(1))
    assert [e for e, _ in metrics(tmp_path / "resumed", "val_accuracy")] == [2]

    archive = tmp_path / "model.tar.gz"
    export_model(tmp_path / "full", 2, archive)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert any(name.endswith(".safetensors") or name.endswith(".onnx") for name in names)
    last = load_checkpoint(tmp_path / "full" / "checkpoints" / checkpoint_name(2))
    assert all(isinstance(v, torch.Tensor) and "_orig_mod" not in k for k, v in last["model"].items())
