"""The README.md of a downloaded archive (inference/export.py writes it first in the archive)."""

from __future__ import annotations

import re

from trainyard.artifact.checkpoint import CheckpointHeader, JobOrigin
from trainyard.inference.detection.archive import README as DETECTION_README


def archive_stem(checkpoint: dict) -> str:
    """The archive's top folder and download name: ``<job name>-epoch-<N>``."""
    name = JobOrigin.of_checkpoint(checkpoint).name or "model"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._") or "model"
    return f"{slug}-epoch-{CheckpointHeader.of(checkpoint).epoch:g}"


def readme_text(checkpoint: dict, info: dict) -> str:
    """The archive's README.md: what is inside and how to run it (a classifier's or a detector's)."""
    stem = archive_stem(checkpoint)
    build = info["build"]
    template = READMES[CheckpointHeader.of(checkpoint).task]
    return template.format(stem=stem, name=info["job"]["name"] or stem, epoch=f"{info['epoch']:g}",
                         network=info["network"], classes=build["num_classes"],
                         channels=build["in_channels"], size=build["image_size"])


README = """# {name}, epoch {epoch}

A {network} image classifier ({classes} classes) exported by trainyard. Run it with numpy,
Pillow and onnxruntime only; the scripts preprocess exactly as the trainyard server does.

    pip install numpy pillow onnxruntime
    python use_archive.py {stem}.tar.gz IMAGE...          # straight from the archive
    python use_archive.py . IMAGE...                      # or from this unpacked folder
    python example.py model.onnx IMAGE... -l labels.txt -m mean.npy -p preprocess.json
    python example.py ... --json --batch-size 32          # JSON for machines; --cpu forces the CPU

Files: model.onnx (input "input" float32 NCHW, batch dynamic; output "logits"),
preprocess.json (size, resize mode, mean mode, crop, scaling), labels.txt, mean.npy/mean.png,
weights.safetensors + network.py (PyTorch), info.json (origin, metrics, versions, checksums).

In PyTorch:

    import importlib.util, safetensors.torch
    spec = importlib.util.spec_from_file_location("network", "network.py")
    network = importlib.util.module_from_spec(spec); spec.loader.exec_module(network)
    model = network.build({classes}, {channels}, {size})
    model.load_state_dict(safetensors.torch.load_file("weights.safetensors")); model.eval()

To fine-tune in trainyard, import the archive (`trainyard import ARCHIVE`, or "Import" in the
browser), then train with `--pretrained JOB`.
"""

SEGMENTATION_README = """# {name}, epoch {epoch}

A {network} semantic segmentation network ({classes} classes) exported by trainyard. Run it with
numpy, Pillow and onnxruntime only; the script preprocesses exactly as `trainyard segment` does.

    pip install numpy pillow onnxruntime
    python use_archive.py {stem}.tar.gz IMAGE... --output MASKS   # straight from the archive
    python use_archive.py . IMAGE... --output MASKS               # or from this unpacked folder

Each image's mask is written to MASKS as an 8-bit index PNG at the image's own size, named by the
image's stem; each pixel's value is its class's line in labels.txt (0-based).

Files: model.onnx (input "input" float32 NCHW in 0..1, batch dynamic; output "logits" NCHW),
preprocess.json (size, channels), labels.txt, weights.safetensors + network.py (PyTorch),
info.json (origin, metrics, versions, checksums).
"""

# A multi-label classifier's: the same files, its scores sigmoids held to a threshold per label.
MULTILABEL_README = README.replace(
    "image classifier ({classes} classes) exported by trainyard.", "multi-label image classifier ({classes} labels) "
    "exported by trainyard:\nan image has each label whose sigmoid score reaches its threshold (preprocess.json).")

# The archive's README by the model's task (core/tasks.py).
READMES = {"classification": README, "detection": DETECTION_README, "multilabel": MULTILABEL_README,
           "segmentation": SEGMENTATION_README}
