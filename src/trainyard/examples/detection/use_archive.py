#!/usr/bin/env python3
"""Detect objects straight from a trainyard detector archive, without unpacking it.

Needs only numpy, Pillow and onnxruntime (not trainyard, not PyTorch):

    python use_archive.py MODEL.tar.gz IMAGE... [--threshold 0.5] [--json] [--draw FOLDER] [--cpu]

The archive's model.onnx, labels.txt, preprocess.json and example.py are read in memory;
example.py's `Detector` does the work, so the fitting is the one shipped with this model. Only
regular files are read, by their base names. An unpacked archive's folder is read the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tarfile
import types

NEEDED = ("model.onnx", "labels.txt", "preprocess.json", "example.py")


def read_members(archive: str) -> dict[str, bytes]:
    """{base name: bytes} of the archive's (or its unpacked folder's) files this script needs."""
    found: dict[str, bytes] = {}
    if os.path.isdir(archive):
        for name in NEEDED:
            path = os.path.join(archive, name)
            if os.path.isfile(path):
                with open(path, "rb") as file:
                    found[name] = file.read()
    else:
        try:
            with tarfile.open(archive, "r:*") as tar:
                for member in tar:
                    base = member.name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
                    if member.isfile() and base in NEEDED and base not in found:
                        data = tar.extractfile(member)
                        assert data is not None  # a regular member always has a file
                        found[base] = data.read()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise SystemExit(f"{archive} is not a trainyard model archive ({exc})") from None
    missing = [name for name in NEEDED if name not in found]
    if missing:
        raise SystemExit(f"{archive} is not a trainyard detector archive (missing {', '.join(missing)})")
    return found


def load_example(source: bytes) -> types.ModuleType:
    """The archive's example.py as a module (its Detector and run)."""
    module = types.ModuleType("trainyard_archive_example")
    module.__file__ = "example.py"
    exec(compile(source, "example.py", "exec"), module.__dict__)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Detect objects with a trainyard detector archive.")
    parser.add_argument("archive", help="the .tar.gz downloaded from trainyard, or its unpacked folder")
    parser.add_argument("images", nargs="+", help="image files")
    files_first = parser.parse_known_args(argv)[0]
    if not os.path.exists(files_first.archive):
        raise SystemExit(f"no such file: {files_first.archive}")
    files = read_members(files_first.archive)
    example = load_example(files["example.py"])
    example.add_options(parser)
    args = parser.parse_args(argv)
    labels = example.parse_labels(files["labels.txt"].decode("utf-8"))
    detector = example.Detector(files["model.onnx"], labels, json.loads(files["preprocess.json"]), cpu=args.cpu)
    return example.run(detector, args)


if __name__ == "__main__":
    sys.exit(main())
