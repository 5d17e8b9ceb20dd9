#!/usr/bin/env python3
"""Detect objects with a trainyard detector exported to ONNX, the way the trainyard server does.

Needs only numpy, Pillow and onnxruntime (not trainyard, not PyTorch):

    python example.py model.onnx IMAGE... -l labels.txt -p preprocess.json
                      [--threshold 0.5] [--json] [--draw FOLDER] [--cpu]

Each image is loaded as 8-bit "L" or "RGB" (EXIF orientation applied, transparency composited
on white) and fitted to the detector's stored size as its dataset was built (preprocess.json):
``pad`` scales by s = min(W / w, H / h) to floor(w s) x floor(h s) and centres it on a grey
canvas, ``squash`` scales each axis alone. The graph gives boxes in stored pixels (its NMS is
inside it); each is mapped back with original = (stored - pad) / scale and clipped to the image.
Boxes at or above --threshold are printed best first, or as one JSON document with --json:
{"results": [{"image": ..., "boxes": [{"label", "score", "box": [x1, y1, x2, y2]}, ...]}]}.
--draw writes each image with its boxes and labels into FOLDER.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageDraw, ImageOps

SAFE_FORMATS = ("JPEG", "PNG", "BMP", "TIFF", "WEBP", "GIF", "PPM")
RESAMPLE = Image.Resampling.BILINEAR
ALPHA_MODES = {"RGBA", "LA", "PA", "RGBa", "La"}
PREFERRED_PROVIDERS = ("CUDAExecutionProvider", "ROCMExecutionProvider", "DmlExecutionProvider",
                       "CoreMLExecutionProvider", "CPUExecutionProvider")
EPS = 1e-9
COLOURS = ((230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180), (70, 240, 240))


def load_image(path: str, channels: int) -> Image.Image:
    """Read an image file as a loaded 8-bit "L" (channels=1) or "RGB" (channels=3) image."""
    with Image.open(path, formats=SAFE_FORMATS) as file:
        file.load()
        img = ImageOps.exif_transpose(file)
        if img.mode == "P" or img.mode in ALPHA_MODES or "transparency" in img.info:
            rgba = img.convert("RGBA")
            img = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
        return img.convert("L" if channels == 1 else "RGB")


def fit(img: Image.Image, prep: dict) -> tuple[np.ndarray, tuple[float, float, int, int]]:
    """(the (H, W, C) uint8 stored-size image, (scale_x, scale_y, pad_x, pad_y))."""
    width, height = prep["width"], prep["height"]
    w, h = img.size
    if prep["resize"] == "squash":
        resized = img.resize((width, height), RESAMPLE, box=(0.0, 0.0, float(w), float(h)))
        return _pixels(resized), (width / w, height / h, 0, 0)
    s = min(width / w, height / h)
    rw, rh = min(width, max(1, math.floor(w * s + EPS))), min(height, max(1, math.floor(h * s + EPS)))
    box = (0.0, 0.0, min(w, rw / s), min(h, rh / s))  # exactly rw / s source pixels: scale s on both axes
    kept = img if img.size == (rw, rh) else img.resize((rw, rh), RESAMPLE, box=box)
    pixels = _pixels(kept)
    out = np.full((height, width, pixels.shape[2]), prep.get("pad_value", 114), np.uint8)
    pad_x, pad_y = (width - rw) // 2, (height - rh) // 2
    out[pad_y:pad_y + rh, pad_x:pad_x + rw] = pixels
    return out, (s, s, pad_x, pad_y)


def _pixels(img: Image.Image) -> np.ndarray:
    pixels = np.asarray(img, dtype=np.uint8)
    return pixels[:, :, None] if pixels.ndim == 2 else pixels


def parse_labels(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class Detector:
    """An ONNX detector with its labels and fitting: ``detect(paths, threshold)`` -> results."""

    def __init__(self, model: bytes | str, labels: list[str], prep: dict, cpu: bool = False):
        available = ort.get_available_providers()
        providers = [p for p in PREFERRED_PROVIDERS if p in available and (not cpu or p == "CPUExecutionProvider")]
        self.session = ort.InferenceSession(model, providers=providers)
        self.labels, self.prep = labels, prep

    def detect_image(self, name: str, img: Image.Image, threshold: float) -> dict:
        pixels, (sx, sy, pad_x, pad_y) = fit(img, self.prep)
        x = (pixels.astype(np.float32) / 255).transpose(2, 0, 1)[None]
        boxes, scores, labels = self.session.run(["boxes", "scores", "labels"], {"images": x})
        keep = scores >= threshold
        boxes, scores, labels = boxes[keep].astype(np.float64), scores[keep], labels[keep]
        boxes[:, 0::2] = np.clip((boxes[:, 0::2] - pad_x) / sx, 0, img.size[0])
        boxes[:, 1::2] = np.clip((boxes[:, 1::2] - pad_y) / sy, 0, img.size[1])
        order = np.argsort(-scores, kind="stable")
        return {"image": name, "boxes": [
            {"label": self.labels[int(labels[i])] if 0 <= labels[i] < len(self.labels) else str(int(labels[i])),
             "score": round(float(scores[i]), 6), "box": [round(float(v), 2) for v in boxes[i]]}
            for i in order]}

    def detect(self, paths: list[str], threshold: float = 0.5) -> list[dict]:
        return [self.detect_image(path, load_image(path, self.prep["channels"]), threshold) for path in paths]


def draw(result: dict, folder: str, channels: int) -> str:
    """Write the image with its boxes and labels into ``folder``; the file written."""
    img = load_image(result["image"], channels).convert("RGB")
    pen = ImageDraw.Draw(img)
    for i, found in enumerate(result["boxes"]):
        colour = COLOURS[i % len(COLOURS)]
        pen.rectangle(found["box"], outline=colour, width=2)
        pen.text((found["box"][0] + 2, found["box"][1] + 1), f"{found['label']} {found['score']:.2f}", fill=colour)
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, os.path.splitext(os.path.basename(result["image"]))[0] + ".boxes.png")
    img.save(out)
    return out


def print_results(results: list[dict], as_json: bool) -> None:
    if as_json:
        json.dump({"results": results}, sys.stdout)
        sys.stdout.write("\n")
        return
    for result in results:
        print(f"{result['image']}: {len(result['boxes'])} boxes")
        for found in result["boxes"]:
            x1, y1, x2, y2 = found["box"]
            print(f"  {100 * found['score']:6.2f}%  {found['label']}  [{x1:.1f}, {y1:.1f}, {x2:.1f}, {y2:.1f}]")


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Detect objects with a trainyard detector exported to ONNX.")
    parser.add_argument("model", help="model.onnx")
    parser.add_argument("images", nargs="+", help="image files")
    parser.add_argument("-l", "--labels", required=True, help="labels.txt")
    parser.add_argument("-p", "--preprocess", required=True, help="preprocess.json")
    add_options(parser)
    return parser.parse_args(argv)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threshold", type=float, default=0.5, help="smallest score of a box shown (0..1)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--draw", metavar="FOLDER", help="also write each image with its boxes here")
    parser.add_argument("--cpu", action="store_true", help="use the CPU even if a GPU provider exists")


def run(detector: Detector, args: argparse.Namespace) -> int:
    missing = [path for path in args.images if not os.path.isfile(path)]
    if missing:
        raise SystemExit(f"no such file: {', '.join(missing)}")
    try:
        results = detector.detect(args.images, args.threshold)
    except OSError as exc:  # unreadable or not an image (PIL's UnidentifiedImageError is an OSError)
        raise SystemExit(f"cannot read an image: {exc}") from None
    print_results(results, args.json)
    for result in results if args.draw else []:
        print(f"drew {draw(result, args.draw, detector.prep['channels'])}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    args = arguments(argv)
    with open(args.labels, encoding="utf-8") as file:
        labels = parse_labels(file.read())
    with open(args.preprocess, encoding="utf-8") as file:
        prep = json.load(file)
    return run(Detector(args.model, labels, prep, cpu=args.cpu), args)


if __name__ == "__main__":
    sys.exit(main())
