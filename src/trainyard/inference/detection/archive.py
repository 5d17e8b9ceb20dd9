"""What a detector's archive holds beside what every archive does (inference/export.py).

model.onnx is the detector with its post-processing (onnx_graph.py), checked against PyTorch on
the dataset's own validation images while the dataset is there (else on noise); preprocess.json
says how an image is fitted (pad or squash, the pad grey) and what the graph answers; the
example scripts are examples/detection's, which print (and draw) the same JSON as the server.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
from torch import nn

from trainyard.artifact.checkpoint import CheckpointHeader, JobOrigin
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.datasets.detection.geometry import PAD_VALUE
from trainyard.datasets.detection.store import DetectionSplit
from trainyard.inference.detection import onnx_graph

PREPROCESS_FORMAT = "trainyard-preprocess/1"
SCRIPTS = ("example.py", "use_archive.py")
CHECK_IMAGES = 4


def check_images(checkpoint: dict, prep: Preprocessing) -> list[np.ndarray]:
    """Stored-size images to compare PyTorch and ONNX Runtime on: the validation split's first
    few (where the detector finds things), else fixed noise."""
    dataset = JobOrigin.of_checkpoint(checkpoint).dataset_dir
    for split in ("val", "train"):
        folder = Path(dataset) / split if dataset else None
        if folder is not None and (folder / "boxes.npy").is_file():
            data = DetectionSplit(folder)
            if data.height == prep.height and data.width == prep.width and len(data):
                return list(data.images(np.arange(min(CHECK_IMAGES, len(data)))))
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, prep.stored_shape, dtype=np.uint8) for _ in range(2)]


def detection_files(checkpoint: dict, model: nn.Module, force: bool = False) -> tuple[dict[str, bytes], dict]:
    """({archive name: bytes} of a detector's own files, the ONNX check figures); ``force`` ships
    a graph that disagrees with PyTorch, its measured disagreement in the figures."""
    prep = Preprocessing.of_checkpoint(checkpoint)
    shape = prep.input_shape
    onnx_bytes = onnx_graph.export_detector(model, shape)
    check = onnx_graph.check_detector(onnx_bytes, model, check_images(checkpoint, prep), force=force)
    files = {
        "preprocess.json": preprocess_document(checkpoint, prep),
        "labels.txt": "".join(f"{name}\n" for name in CheckpointHeader.of(checkpoint).classes).encode(),
        "model.onnx": onnx_bytes,
        **{name: script_source(name) for name in SCRIPTS},
    }
    return files, check


def preprocess_document(checkpoint: dict, prep: Preprocessing) -> bytes:
    import json

    channels, h, w = prep.input_shape
    doc = {
        "format": PREPROCESS_FORMAT, "task": "detection",
        "width": prep.width, "height": prep.height, "channels": channels,
        "channel_order": "RGB" if channels == 3 else "L",
        "resize": prep.resize, "interpolation": "bilinear", "pad_value": PAD_VALUE,
        "fit": "pad: s = min(width / w, height / h), resized to floor(w s) x floor(h s), centred at integer "
               "offsets pad_x = (width - floor(w s)) // 2 (y alike); squash: each axis alone, no pad. "
               "Original pixels = (stored - pad) / scale, per axis.",
        "mean_mode": "none", "crop": None, "scale": prep.scale, "std": None,
        "image_size": CheckpointHeader.of(checkpoint).image_size,
        "input": {"name": onnx_graph.INPUT, "layout": "NCHW", "dtype": "float32", "shape": [1, channels, h, w],
                  "formula": "pixel / 255 (the graph normalises inside); one image per run"},
        "outputs": {"boxes": "(K, 4) float32 x1, y1, x2, y2 in stored pixels", "scores": "(K,) float32 0..1",
                    "labels": "(K,) int64 index into labels.txt"},
        "threshold": 0.5,
    }
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def script_source(name: str) -> bytes:
    """A packaged detection example script (src/trainyard/examples/detection)."""
    return (resources.files("trainyard") / "examples" / "detection" / name).read_bytes()


README = """# {name}, epoch {epoch}

A {network} object detector ({classes} classes) exported by trainyard. Run it with numpy,
Pillow and onnxruntime only; the scripts fit each image as the trainyard server does and print
its boxes in the image's own pixels, best first.

    pip install numpy pillow onnxruntime
    python use_archive.py {stem}.tar.gz IMAGE...          # straight from the archive
    python use_archive.py . IMAGE... --threshold 0.3      # or from this unpacked folder
    python example.py model.onnx IMAGE... -l labels.txt -p preprocess.json --json
    python example.py ... --draw OUT_FOLDER               # also writes each image with its boxes

Files: model.onnx (input "images" float32 (1, C, H, W) 0..1; outputs "boxes", "scores",
"labels": the post-processing, NMS included, is inside the graph), preprocess.json (size, fit,
pad grey), labels.txt, weights.safetensors + network.py (PyTorch), info.json (origin, metrics,
versions, checksums).

To fine-tune in trainyard, import the archive (`trainyard import ARCHIVE`), then train with
`--pretrained JOB`.
"""
