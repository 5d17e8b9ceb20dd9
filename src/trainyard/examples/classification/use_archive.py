#!/usr/bin/env python3
"""Classify images straight from a trainyard model archive, without unpacking it.

Needs only numpy, Pillow and onnxruntime (not trainyard, not PyTorch):

    python use_archive.py MODEL.tar.gz IMAGE... [--batch-size N] [--top 5] [--json] [--cpu]

The archive's files are read in memory: model.onnx, labels.txt, mean.npy, preprocess.json and
example.py, whose `Classifier` does the work, so the preprocessing is the one shipped with
this model. Only regular files are read, and only by their base names: nothing is written.
An unpacked archive's folder (``.`` from inside it) is read the same way.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import time
import types

NEEDED = ("model.onnx", "labels.txt", "mean.npy", "preprocess.json", "example.py")


def read_members(archive: str) -> dict[str, bytes]:
    """{base name: bytes} of the archive's (or its unpacked folder's) regular files that this
    script needs."""
    found: dict[str, bytes] = {}
    if os.path.isdir(archive):
        for name in NEEDED:
            path = os.path.join(archive, name)
            if os.path.isfile(path):
                with open(path, "rb") as file:
                    found[name] = file.read()
        return _complete(archive, found)
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                base = member.name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
                if member.isfile() and base in NEEDED and base not in found:
                    data = tar.extractfile(member)
                    assert data is not None  # extractfile returns a file for every regular member
                    found[base] = data.read()
    except (tarfile.TarError, EOFError, OSError) as exc:  # not a tar, or cut short in the download
        raise SystemExit(f"{archive} is not a trainyard model archive ({exc})") from None
    return _complete(archive, found)


def _complete(archive: str, found: dict[str, bytes]) -> dict[str, bytes]:
    missing = [name for name in NEEDED if name not in found]
    if missing:
        raise SystemExit(f"{archive} is not a trainyard model archive (missing {', '.join(missing)})")
    return found


def load_example(source: bytes) -> types.ModuleType:
    """The archive's example.py as a module (its Classifier and print_results)."""
    module = types.ModuleType("trainyard_archive_example")
    module.__file__ = "example.py"
    exec(compile(source, "example.py", "exec"), module.__dict__)
    return module


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Classify images with a trainyard model archive.")
    parser.add_argument("archive", help="the .tar.gz downloaded from trainyard, or its unpacked folder")
    parser.add_argument("images", nargs="+", help="image files")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--top", type=int, default=5, help="predictions per image")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--cpu", action="store_true", help="use the CPU even if a GPU provider exists")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = arguments(argv)
    # A mistyped path is a one-line message, not a traceback from deep inside Pillow.
    missing = [path for path in args.images if not os.path.isfile(path)]
    if not os.path.exists(args.archive):
        missing.insert(0, args.archive)
    if missing:
        raise SystemExit(f"no such file: {', '.join(missing)}")
    files = read_members(args.archive)
    example = load_example(files["example.py"])
    labels = example.parse_labels(files["labels.txt"].decode("utf-8"))
    mean = example.np.load(io.BytesIO(files["mean.npy"]), allow_pickle=False)
    prep = json.loads(files["preprocess.json"])
    classifier = example.Classifier(files["model.onnx"], labels, mean, prep, cpu=args.cpu)
    start = time.perf_counter()
    try:
        results = classifier.classify(args.images, max(1, args.batch_size), args.top)
    except OSError as exc:  # unreadable or not an image (PIL's UnidentifiedImageError is an OSError)
        raise SystemExit(f"cannot read an image: {exc}") from None
    example.print_results(results, args.json, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
