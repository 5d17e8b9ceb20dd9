"""The checkpoint's descriptive entries are one typed header (artifact/checkpoint.CheckpointHeader),
and a checkpoint written before it had task, spec or metrics still loads, builds and exports its name."""

from __future__ import annotations

import pytest
import torch

from trainyard.artifact.checkpoint import (
    FORMAT,
    CheckpointError,
    CheckpointHeader,
    build_model_from_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from trainyard.artifact.network import create_model
from trainyard.inference.archive_readme import archive_stem


def _old_checkpoint() -> dict:
    """What an early trainyard wrote: no task, no spec, no metrics, no best."""
    model = create_model("lenet", None, 2, 1, 28, (28, 28))
    return {"format": FORMAT, "model": model.state_dict(), "network": "lenet", "network_source": None,
            "classes": ["a", "b"], "image_size": 28, "epoch": 3,
            "preprocess": {"width": 28, "height": 28, "channels": 1, "resize": "squash", "mean_mode": "none",
                           "crop": None, "mean": None, "scale": "0..1"}}


def test_an_old_checkpoint_loads_with_the_headers_defaults_and_builds(tmp_path):
    path = save_checkpoint(tmp_path / "epoch-0003.pt", _old_checkpoint())
    checkpoint = load_checkpoint(path)
    header = CheckpointHeader.of(checkpoint)
    assert (header.task, header.metrics, header.best, header.spec, header.epoch) == ("classification", {}, None,
                                                                                      None, 3.0)
    assert header.network_name == "lenet" and archive_stem(checkpoint) == "model-epoch-3"
    model = build_model_from_checkpoint(checkpoint)
    assert model(torch.zeros(1, 1, 28, 28)).shape == (1, 2)


def test_the_header_is_written_and_read_back_in_one_place():
    header = CheckpointHeader(network=None, network_source="def build(...): ...", classes=["x"], image_size=8,
                              epoch=1.5, task="detection", metrics={"val_map50": [[1.0, 0.5]]},
                              best={"epoch": 1.0, "val_map50": 0.5}, spec={"id": "m1"})
    assert "imported" not in header.entries()  # only an archive's checkpoint has one
    assert CheckpointHeader.of({**header.entries(), "model": {}}) == header
    assert header.network_name == "custom"


def test_a_checkpoint_without_its_classes_is_refused_in_one_line():
    with pytest.raises(CheckpointError, match="classes"):
        CheckpointHeader.of({"format": FORMAT, "network": "lenet", "image_size": 28, "epoch": 1})
