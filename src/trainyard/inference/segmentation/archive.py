"""What a segmenter's archive holds beside what every archive does (inference/export.py).

model.onnx is the network's logits graph (onnx_export.py's, checked against PyTorch);
preprocess.json says how an image is fitted (squashed to the stored size, pixels / 255) and how
the mask goes back (arg-max, then nearest neighbour to the image's size); use_archive.py
(examples/segmentation) writes the same index PNG as ``trainyard segment``.
"""

from __future__ import annotations

import json
from importlib import resources

from torch import nn

from trainyard.artifact.checkpoint import CheckpointHeader
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference import onnx_export

PREPROCESS_FORMAT = "trainyard-preprocess/1"
SCRIPTS = ("use_archive.py",)


def segmentation_files(checkpoint: dict, model: nn.Module, force: bool = False) -> tuple[dict[str, bytes], dict]:
    """({archive name: bytes} of a segmenter's own files, the ONNX check figures)."""
    prep = Preprocessing.of_checkpoint(checkpoint)
    shape = prep.input_shape
    onnx_bytes = onnx_export.export_onnx(model, shape)
    check = onnx_export.check_onnx(onnx_bytes, model, shape).as_dict()
    files = {
        "preprocess.json": preprocess_document(checkpoint, prep),
        "labels.txt": "".join(f"{name}\n" for name in CheckpointHeader.of(checkpoint).classes).encode(),
        "model.onnx": onnx_bytes,
        **{name: (resources.files("trainyard") / "examples" / "segmentation" / name).read_bytes()
           for name in SCRIPTS},
    }
    return files, check


def preprocess_document(checkpoint: dict, prep: Preprocessing) -> bytes:
    channels, h, w = prep.input_shape
    doc = {
        "format": PREPROCESS_FORMAT, "task": "segmentation",
        "width": prep.width, "height": prep.height, "channels": channels,
        "channel_order": "RGB" if channels == 3 else "L", "resize": "squash", "interpolation": "bilinear",
        "mean_mode": "none", "crop": None, "std": None, "image_size": CheckpointHeader.of(checkpoint).image_size,
        "input": {"name": onnx_export.INPUT_NAME, "layout": "NCHW", "dtype": "float32",
                  "shape": ["batch", channels, h, w], "formula": "pixel / 255"},
        "output": {"name": onnx_export.OUTPUT_NAME, "layout": "NCHW", "meaning": "logits per class and pixel"},
        "mask": "arg-max over the classes, resized to the image's size by nearest neighbour; an 8-bit index PNG",
    }
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
