#!/usr/bin/env python3
"""Classify images with a trainyard Core ML archive, on a Mac: coremltools, numpy and Pillow only.

    python use_archive.py MODEL.tar.gz IMAGE... [--compute-units cpu_only] [--top 5] [--json]

Core ML runs models only on Apple machines: coremltools' MLModel.predict needs macOS (on iOS, load
model.mlpackage with Core ML itself and prepare images as example.py does). Reads
model.mlpackage.zip (an ML Program taking one image at a time), labels.txt, mean.npy,
preprocess.json and example.py from the archive (or its unpacked folder). The package runs on the
CPU by default, as the export's check ran it; ``--compute-units all`` lets Core ML choose the GPU or
the Neural Engine, whose fp16 arithmetic differs slightly. example.py's preprocessing is the one the
ONNX archive ships; its ONNX Runtime import is satisfied by an empty stand-in, since only its numpy
and Pillow functions run here.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import tempfile
import types
import zipfile

import numpy as np

NEEDED = ("model.mlpackage.zip", "labels.txt", "mean.npy", "preprocess.json", "example.py")
UNITS = {"cpu_only": "CPU_ONLY", "cpu_and_gpu": "CPU_AND_GPU", "cpu_and_ne": "CPU_AND_NE", "all": "ALL"}


def read_members(archive: str) -> dict[str, bytes]:
    """{base name: bytes} of the regular files this script needs."""
    found: dict[str, bytes] = {}
    if os.path.isdir(archive):
        for name in NEEDED:
            path = os.path.join(archive, name)
            if os.path.isfile(path):
                with open(path, "rb") as file:
                    found[name] = file.read()
    else:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar.getmembers():
                base = os.path.basename(member.name)
                if member.isfile() and base in NEEDED and base not in found:
                    extracted = tar.extractfile(member)
                    if extracted is not None:
                        found[base] = extracted.read()
    missing = [name for name in NEEDED if name not in found]
    if missing:
        raise SystemExit(f"{archive} is not a trainyard Core ML archive (missing {', '.join(missing)})")
    return found


def load_example(source: bytes) -> types.ModuleType:
    """example.py as a module, without ONNX Runtime (none of what runs here needs it)."""
    sys.modules.setdefault("onnxruntime", types.ModuleType("onnxruntime"))
    module = types.ModuleType("trainyard_archive_example")
    module.__file__ = "example.py"
    exec(compile(source, "example.py", "exec"), module.__dict__)
    return module


def classifier(files: dict[str, bytes], example: types.ModuleType, units: str, folder: str):
    """example.py's Classifier with the Core ML package (unpacked into ``folder``) in place of the
    ONNX session."""
    import coremltools as ct

    with zipfile.ZipFile(io.BytesIO(files["model.mlpackage.zip"])) as package:
        package.extractall(folder)

    class CoreMLClassifier(example.Classifier):  # type: ignore[name-defined]  # example.py, loaded at run time
        def __init__(self) -> None:
            self.model = ct.models.MLModel(os.path.join(folder, "model.mlpackage"),
                                           compute_units=getattr(ct.ComputeUnit, UNITS[units]))
            self.labels = example.parse_labels(files["labels.txt"].decode("utf-8"))
            self.prep = json.loads(files["preprocess.json"])
            self.mean = example.mean_input(np.load(io.BytesIO(files["mean.npy"]), allow_pickle=False), self.prep)
            self.thresholds = self.prep.get("thresholds")

        def probabilities(self, images):
            x = example.preprocess(images, self.prep, self.mean)
            # The package takes one image (batch 1, as it was converted): run each in turn.
            logits = np.concatenate([np.asarray(self.model.predict({"input": x[i:i + 1]})["logits"])
                                     for i in range(len(x))])
            return example.softmax(logits) if self.thresholds is None else example.sigmoid(logits)
    return CoreMLClassifier()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Classify images with a trainyard Core ML archive (macOS).")
    parser.add_argument("archive", help="the .tar.gz exported by trainyard, or its unpacked folder")
    parser.add_argument("images", nargs="+", help="image files")
    parser.add_argument("--compute-units", choices=sorted(UNITS), default="cpu_only",
                        help="where Core ML runs the model (cpu_only: as the export's check did)")
    parser.add_argument("--batch-size", type=int, default=32, help="images read at a time")
    parser.add_argument("--top", type=int, default=5, help="predictions per image")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    if sys.platform != "darwin":
        raise SystemExit(f"Core ML runs models only on Apple machines (macOS), not on {sys.platform}: "
                         "run this script on a Mac, or export to onnx, openvino or executorch for this machine")
    missing = [path for path in [args.archive, *args.images] if not os.path.exists(path)]
    if missing:
        raise SystemExit(f"no such file: {', '.join(missing)}")
    files = read_members(args.archive)
    example = load_example(files["example.py"])
    with tempfile.TemporaryDirectory(prefix="trainyard-coreml-") as folder:
        try:
            results = classifier(files, example, args.compute_units, folder).classify(
                args.images, max(1, args.batch_size), args.top)
        except OSError as exc:
            raise SystemExit(f"cannot read an image: {exc}") from None
    example.print_results(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
