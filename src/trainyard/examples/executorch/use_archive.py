#!/usr/bin/env python3
"""Classify images with a trainyard ExecuTorch archive: executorch, numpy and Pillow only.

    python use_archive.py MODEL.tar.gz IMAGE... [--top 5] [--json]

Reads model.pte (an ExecuTorch program, its network lowered to the XNNPACK backend; it takes one
image at a time), labels.txt, mean.npy, preprocess.json and example.py from the archive (or its
unpacked folder) in memory. ``pip install executorch numpy pillow``: ExecuTorch's Python runtime
takes and returns torch tensors (its wheel brings PyTorch's libraries); on a device, ExecuTorch's
C++ runtime runs model.pte alone, with this preprocessing. example.py's preprocessing is the one
the ONNX archive ships; its ONNX Runtime import is satisfied by an empty stand-in, since only its
numpy and Pillow functions run here.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import types
import warnings

import numpy as np
import torch

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # ExecuTorch's "experimental API" notice
    from executorch.runtime import Runtime

NEEDED = ("model.pte", "labels.txt", "mean.npy", "preprocess.json", "example.py")


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
        raise SystemExit(f"{archive} is not a trainyard ExecuTorch archive (missing {', '.join(missing)})")
    return found


def load_example(source: bytes) -> types.ModuleType:
    """example.py as a module, without ONNX Runtime (none of what runs here needs it)."""
    sys.modules.setdefault("onnxruntime", types.ModuleType("onnxruntime"))
    module = types.ModuleType("trainyard_archive_example")
    module.__file__ = "example.py"
    exec(compile(source, "example.py", "exec"), module.__dict__)
    return module


def classifier(files: dict[str, bytes], example: types.ModuleType):
    """example.py's Classifier with the ExecuTorch program in place of the ONNX session."""
    class ExecuTorchClassifier(example.Classifier):  # type: ignore[name-defined]  # example.py, loaded at run time
        def __init__(self) -> None:
            self.method = Runtime.get().load_program(files["model.pte"]).load_method("forward")
            self.labels = example.parse_labels(files["labels.txt"].decode("utf-8"))
            self.prep = json.loads(files["preprocess.json"])
            self.mean = example.mean_input(np.load(io.BytesIO(files["mean.npy"]), allow_pickle=False), self.prep)
            self.thresholds = self.prep.get("thresholds")

        def probabilities(self, images):
            x = torch.from_numpy(example.preprocess(images, self.prep, self.mean))
            # The program takes one image (batch 1, as it was lowered): run each in turn.
            logits = np.concatenate([self.method.execute([x[i:i + 1]])[0].numpy() for i in range(len(x))])
            return example.softmax(logits) if self.thresholds is None else example.sigmoid(logits)
    return ExecuTorchClassifier()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Classify images with a trainyard ExecuTorch archive.")
    parser.add_argument("archive", help="the .tar.gz exported by trainyard, or its unpacked folder")
    parser.add_argument("images", nargs="+", help="image files")
    parser.add_argument("--batch-size", type=int, default=32, help="images read at a time")
    parser.add_argument("--top", type=int, default=5, help="predictions per image")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    missing = [path for path in [args.archive, *args.images] if not os.path.exists(path)]
    if missing:
        raise SystemExit(f"no such file: {', '.join(missing)}")
    files = read_members(args.archive)
    example = load_example(files["example.py"])
    try:
        results = classifier(files, example).classify(args.images, max(1, args.batch_size), args.top)
    except OSError as exc:
        raise SystemExit(f"cannot read an image: {exc}") from None
    example.print_results(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
