"""The JSON documents of an exported archive: preprocess.json (how to give the network its
input, and what its output means) and info.json (where the model comes from, how good it was,
and with what it was made)."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

import trainyard
from trainyard.artifact.checkpoint import CheckpointHeader, JobOrigin
from trainyard.artifact.inputs import INFERENCE_NOISE_SEED
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.datasets.info import INFO_FILE, DatasetInfo
from trainyard.inference import onnx_export

ARCHIVE_FORMAT = "trainyard-archive/1"
PREPROCESS_FORMAT = "trainyard-preprocess/1"


def preprocess_document(checkpoint: dict, prep: Preprocessing) -> dict:
    """preprocess.json: everything example.py needs to give ``checkpoint``'s network its input."""
    channels, h, w = prep.input_shape
    mean_mode = prep.mean_mode if prep.mean is not None else "none"
    header = CheckpointHeader.of(checkpoint)
    return {
        "format": PREPROCESS_FORMAT,
        "width": prep.width, "height": prep.height, "channels": channels,
        "channel_order": {1: "L", 3: "RGB"}.get(channels, "as stored"), "depth": prep.depth,
        "resize": prep.resize, "interpolation": "bilinear",
        "noise_seed": INFERENCE_NOISE_SEED,
        "noise": "fill/half_crop padding: numpy.random.default_rng(noise_seed).integers(0, 255, "
                 "(height, width, channels), uint8), a fresh generator per image",
        "mean_mode": mean_mode, "crop": prep.crop, "scale": prep.scale,
        "std": list(prep.std) if prep.std else None,
        "image_size": header.image_size,
        "input": {"name": onnx_export.INPUT_NAME, "layout": "NCHW", "dtype": "float32",
                  "shape": ["batch", channels, h, w],
                  "formula": f"(pixel / {2 ** prep.depth - 1} - mean / 255) / std (mean per mean_mode, "
                             "centre-cropped like the image; std per channel, 1 when null)"},
        "output": {"name": onnx_export.OUTPUT_NAME, "shape": ["batch", len(header.classes)],
                   "meaning": "logits: apply a softmax for probabilities"},
        **_multilabel_output(checkpoint),
    }


def _multilabel_output(checkpoint: dict) -> dict:
    """A multi-label classifier's thresholds (one a label, labels.txt's order) and what its
    logits mean; nothing for a classifier of one label an image."""
    thresholds = checkpoint.get("thresholds")
    if thresholds is None:
        return {}
    return {"task": CheckpointHeader.of(checkpoint).task, "thresholds": list(thresholds),
            "output": {"name": onnx_export.OUTPUT_NAME, "shape": ["batch", len(thresholds)],
                       "meaning": "logits: apply a sigmoid per label; a label holds at or over its threshold"}}


def info_document(checkpoint: dict, prep: Preprocessing, checkpoint_path: Path, check: dict,
                  files: dict[str, bytes]) -> dict:
    """info.json: where the model comes from, how good it was, and with what it was made."""
    origin = JobOrigin.of_checkpoint(checkpoint)
    header = CheckpointHeader.of(checkpoint)
    epoch, history = header.epoch, header.metrics
    return {
        "format": ARCHIVE_FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "job": {"id": origin.id, "name": origin.name, "checkpoint": checkpoint_path.name},
        "dataset": {"id": origin.dataset_id, "name": _dataset_name(origin.dataset_dir)},
        "network": header.network_name,
        "task": header.task,
        "build": {"num_classes": len(header.classes), "in_channels": prep.channels,
                  "image_size": header.image_size},
        "epoch": epoch,
        "metrics": {name: points[-1][1] for name, points in history.items()
                    if points and points[-1][0] <= epoch},
        "best": header.best,
        "history": history,
        "versions": _versions(),
        "onnx_check": check,
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }


def _dataset_name(dataset_dir: str | None) -> str | None:
    """The training dataset's name, while its folder is still there."""
    if not dataset_dir:
        return None
    try:  # read by path as before: this runs where the dataset was bound for the export
        return DatasetInfo.of(json.loads((Path(dataset_dir) / INFO_FILE).read_text())).name
    except (OSError, ValueError):
        return None


def _versions() -> dict:
    import onnx
    import onnxruntime

    return {"trainyard": trainyard.__version__, "torch": torch.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0], "onnx_opset": onnx_export.OPSET}
