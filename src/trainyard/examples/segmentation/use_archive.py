#!/usr/bin/env python3
"""Segment images straight from a trainyard segmentation archive, without unpacking it.

Needs only numpy, Pillow and onnxruntime (not trainyard, not PyTorch):

    python use_archive.py MODEL.tar.gz IMAGE... --output FOLDER [--json] [--cpu]

Each image's mask is written to FOLDER as an 8-bit index PNG at the image's own size, named by the
image's stem, each pixel its class's line in labels.txt (0-based): the file ``trainyard segment``
writes. The image is read as trainyard reads it (upright by its EXIF orientation, transparency on
white, 1 or 3 channels), squashed to the stored size (bilinear), fed as pixel / 255; the arg-max
is resized back by nearest neighbour. Only regular files are read from the archive, by base name.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tarfile

import numpy as np
from PIL import Image, ImageOps

NEEDED = ("model.onnx", "labels.txt", "preprocess.json")


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
        raise SystemExit(f"{archive} is not a trainyard segmentation archive (missing {', '.join(missing)})")
    return found


def read_image(path: str, channels: int) -> Image.Image:
    """The image upright, in "L" or "RGB", transparency flattened on white."""
    img = ImageOps.exif_transpose(Image.open(path))
    if img.mode == "P" or img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info:
        rgba = img.convert("RGBA")
        img = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba).convert("RGB")
    elif img.mode not in ("L", "RGB"):
        img = img.convert("RGB")
    return img.convert("L" if channels == 1 else "RGB")


def segment(session, prep: dict, path: str) -> np.ndarray:
    """The (h, w) uint8 class indices of the image at ``path``, at its own size."""
    img = read_image(path, prep["channels"])
    size = img.size
    fitted = np.asarray(img.resize((prep["width"], prep["height"]), Image.Resampling.BILINEAR), np.uint8)
    x = fitted.reshape(1, prep["height"], prep["width"], prep["channels"]).transpose(0, 3, 1, 2)
    logits = session.run([prep["output"]["name"]], {prep["input"]["name"]: x.astype(np.float32) / 255})[0]
    found = logits[0].argmax(0).astype(np.uint8)
    return np.asarray(Image.fromarray(found).resize(size, Image.Resampling.NEAREST), np.uint8)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Segment images with a trainyard segmentation archive.")
    parser.add_argument("archive", help="the .tar.gz downloaded from trainyard, or its unpacked folder")
    parser.add_argument("images", nargs="+", help="image files")
    parser.add_argument("--output", required=True, help="folder the index-PNG masks are written to")
    parser.add_argument("--json", action="store_true", help="print the masks written as JSON")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even where a GPU is available")
    args = parser.parse_args(argv)
    if not os.path.exists(args.archive):
        raise SystemExit(f"no such file: {args.archive}")
    import onnxruntime as ort

    files = read_members(args.archive)
    prep = json.loads(files["preprocess.json"])
    labels = files["labels.txt"].decode("utf-8").splitlines()
    providers = ["CPUExecutionProvider"] if args.cpu else ort.get_available_providers()
    session = ort.InferenceSession(files["model.onnx"], providers=providers)
    os.makedirs(args.output, exist_ok=True)
    results, failed = [], False
    for path in args.images:
        try:
            mask = segment(session, prep, path)
        except (OSError, ValueError) as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            results.append({"image": path, "error": str(exc)})
            failed = True
            continue
        target = os.path.join(args.output, os.path.splitext(os.path.basename(path))[0] + ".png")
        Image.fromarray(mask, mode="L").save(target)
        counts = np.bincount(mask.reshape(-1), minlength=len(labels))[:len(labels)]
        results.append({"image": path, "mask": target,
                        "areas": {n: round(float(c) / mask.size, 6) for n, c in zip(labels, counts)}})
        if not args.json:
            print(f"{path} -> {target}")
    if args.json:
        print(json.dumps({"classes": labels, "results": results}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
