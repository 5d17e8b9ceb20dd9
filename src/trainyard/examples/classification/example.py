#!/usr/bin/env python3
"""Classify images with a trainyard model exported to ONNX, the way the trainyard server does.

Needs only numpy, Pillow and onnxruntime (not trainyard, not PyTorch; a 16-bit or N-channel model
reads TIFF with tifffile and 16-bit colour PNG with pypng):

    python example.py model.onnx IMAGE... -l labels.txt -m mean.npy [-p preprocess.json]
                      [--batch-size N] [--top 5] [--json] [--cpu]

Each image goes through exactly the server's preprocessing, recorded in preprocess.json:
loaded as 8-bit "L" or "RGB" (EXIF orientation applied, transparency composited on white,
16-bit scaled), resized with DIGITS's geometry for the dataset's resize mode (squash, crop,
fill or half_crop; the padding noise of fill and half_crop comes from a fixed seed, so an
image always gets the same input), centre-cropped, scaled to 0..1 and minus the mean in 0..1
(then divided by the per-channel std of the pretrained weights the model was fine-tuned from,
when preprocess.json has one). A model trained on 16-bit or N-channel images ("depth": 16 or
more than 3 channels in preprocess.json) reads them at full depth instead (16-bit PNG, TIFF),
scales by 1/65535 at 16 bits, and divides by the dataset's per-channel std.
The network's logits go through a softmax; the top predictions are printed per image, or as
one JSON document with --json: {"results": [{"image": ..., "predictions": [[label, p], ...]}]}.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageOps

SAFE_FORMATS = ("JPEG", "PNG", "BMP", "TIFF", "WEBP", "GIF", "PPM")
RESAMPLE = Image.Resampling.BILINEAR
ALPHA_MODES = {"RGBA", "LA", "PA", "RGBa", "La"}
WIDE_MODES = {"I", "I;16", "I;16L", "I;16B", "I;16N", "F"}
# GPU providers first when this onnxruntime build has one; the CPU always works.
PREFERRED_PROVIDERS = ("CUDAExecutionProvider", "ROCMExecutionProvider", "DmlExecutionProvider",
                       "CoreMLExecutionProvider", "CPUExecutionProvider")


# -- loading: like trainyard.datasets.images -------------------------------------------------
def load_image(path: str, channels: int) -> Image.Image:
    """Read an image file as a loaded 8-bit "L" (channels=1) or "RGB" (channels=3) image."""
    with Image.open(path, formats=SAFE_FORMATS) as img:
        img.load()
        return to_mode(ImageOps.exif_transpose(img), channels)


def to_mode(img: Image.Image, channels: int) -> Image.Image:
    """Convert any mode to "L" or "RGB" without clipping wide values or blackening alpha."""
    target = "L" if channels == 1 else "RGB"
    if img.mode in WIDE_MODES:
        img = _wide_to_8bit(img)
    elif img.mode == "P" or img.mode in ALPHA_MODES or "transparency" in img.info:
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(white, rgba).convert("RGB")
    elif img.mode not in ("L", "RGB"):
        img = img.convert("RGB")
    return img.convert(target) if img.mode != target else img


def _wide_to_8bit(img: Image.Image) -> Image.Image:
    arr = np.asarray(img)
    if img.mode == "F":
        arr = arr.astype(np.float64)
        finite = arr[np.isfinite(arr)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if lo >= 0 and hi <= 1:
            lo, hi = 0.0, 1.0
        return Image.fromarray(_stretch(np.nan_to_num(arr, nan=lo), lo, hi), "L")
    arr = arr.astype(np.int64)
    if img.mode.startswith("I;16") or (arr.size and arr.min() >= 0 and arr.max() <= 65535):
        return Image.fromarray(((arr * 255 + 32767) // 65535).astype(np.uint8), "L")
    return Image.fromarray(_stretch(arr.astype(np.float64), float(arr.min()), float(arr.max())), "L")


def _stretch(arr: np.ndarray, lo: float, hi: float) -> np.ndarray:
    span = hi - lo if hi > lo else 1.0
    return np.clip(np.rint((arr - lo) * (255.0 / span)), 0, 255).astype(np.uint8)


# -- full depth: 16-bit and N-channel images, like trainyard.datasets.deep -------------------
def full_depth(prep: dict) -> bool:
    return prep.get("depth", 8) != 8 or prep["channels"] not in (1, 3)


def load_array(path: str, channels: int, depth: int) -> np.ndarray:
    """(H, W, channels) uint8 or uint16 at the model's depth; an 8-bit file at 16 bits is x 257."""
    if path.lower().endswith((".tif", ".tiff")):
        import tifffile  # pip install tifffile

        with tifffile.TiffFile(path) as tif:
            pixels, axes = tif.series[0].asarray(), tif.series[0].axes
        bands = [i for i, a in enumerate(axes) if a in "SCIQ"]  # samples, channels, pages: channels
        pixels = np.transpose(pixels, [axes.index("Y"), axes.index("X"), *bands])
    else:
        with Image.open(path, formats=SAFE_FORMATS) as img:
            grey16, deep = img.mode.startswith("I;16"), bool(img.tile and ";16" in str(img.tile[0][3]))
            grey = np.asarray(img).astype(np.uint16) if grey16 else None
        if grey is not None:
            pixels = grey
        else:
            pixels = read_png16(path) if deep else np.asarray(load_image(path, min(channels, 3)))
    pixels = pixels.reshape(*pixels.shape[:2], -1)
    if pixels.shape[2] != channels:
        if {pixels.shape[2], channels} != {1, 3}:
            raise ValueError(f"{path}: image has {pixels.shape[2]} channel(s); the model takes {channels}")
        if channels == 3:
            pixels = np.repeat(pixels, 3, axis=2)
        else:  # ITU-R 601 luma, as Pillow's RGB -> L
            luma = np.rint(pixels[:, :, :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114]))
            pixels = luma.astype(pixels.dtype)[:, :, None]
    dtype = np.dtype(np.uint16 if depth == 16 else np.uint8)
    return pixels if pixels.dtype == dtype else pixels.astype(dtype) * np.asarray(257, dtype)


def read_png16(path: str) -> np.ndarray:
    """A 16-bit colour PNG (Pillow reads it as 8 bits) with pypng, alpha composited on white."""
    import png  # pip install pypng

    width, height, rows, info = png.Reader(filename=path).asDirect()
    pixels = np.vstack([np.asarray(row, np.uint16) for row in rows]).reshape(height, width, info["planes"])
    if not info["alpha"]:
        return pixels
    alpha = pixels[:, :, -1:].astype(np.float64) / 65535.0
    return np.rint(pixels[:, :, :-1] * alpha + 65535.0 * (1.0 - alpha)).astype(np.uint16)


def resize_array(pixels: np.ndarray, width: int, height: int, mode: str, noise_seed: int) -> np.ndarray:
    """resize_image for any dtype and channel count: each channel resampled in float, rounded."""
    h, w, c = pixels.shape
    resized, (x0, y0, x1, y1), offset = plan_resize(w, h, width, height, mode)
    kept = pixels
    if (w, h) != (x1 - x0, y1 - y0) or resized != (w, h):
        box = (x0 * w / resized[0], y0 * h / resized[1], x1 * w / resized[0], y1 * h / resized[1])
        planes = [np.asarray(Image.fromarray(pixels[:, :, k].astype(np.float32), "F")
                             .resize((x1 - x0, y1 - y0), RESAMPLE, box=box)) for k in range(c)]
        kept = np.clip(np.rint(np.stack(planes, axis=2)), 0, np.iinfo(pixels.dtype).max).astype(pixels.dtype)
    return placed(kept, width, height, offset, noise_seed)


def placed(kept: np.ndarray, width: int, height: int, offset: tuple[int, int], noise_seed: int) -> np.ndarray:
    """(H, W, C) ``kept`` at ``offset`` in a (height, width) of noise (fill, half_crop). A fresh
    generator per image, as on the server: the same image always gets the same noise."""
    if kept.shape[:2] == (height, width):
        return np.ascontiguousarray(kept)
    noise = np.random.default_rng(noise_seed).integers(0, int(np.iinfo(kept.dtype).max),
                                                       size=(height, width, kept.shape[2]), dtype=kept.dtype)
    noise[offset[1]:offset[1] + kept.shape[0], offset[0]:offset[0] + kept.shape[1]] = kept
    return noise


# -- resizing: DIGITS's geometry, like trainyard.datasets.resize ------------------------------
def py2_round(x: float) -> int:
    """Round half away from zero (Python 2's round(), which DIGITS used)."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def _even(size: int, target: int) -> int:
    return size + 1 if (target - size) % 2 == 1 else size


def plan_resize(w: int, h: int, width: int, height: int, mode: str):
    """((resized w, h), kept window (x0, y0, x1, y1), offset (x, y) in the target)."""
    wr, hr = w / width, h / height
    if mode == "squash" or wr == hr:
        return (width, height), (0, 0, width, height), (0, 0)
    if mode not in ("crop", "fill", "half_crop"):
        raise ValueError(f"unknown resize mode {mode!r}")
    if wr < hr:  # taller than the target: the wider case, transposed
        (rh, rw), (y0, x0, y1, x1), (oy, ox) = plan_resize(h, w, height, width, mode)
        return (rw, rh), (x0, y0, x1, y1), (ox, oy)
    if mode == "crop":
        rw = py2_round(w / hr)
        start = py2_round((rw - width) / 2.0)
        return (rw, height), (start, 0, start + width, height), (0, 0)
    if mode == "fill":
        rh = _even(max(1, py2_round(h / wr)), height)
        return (width, rh), (0, 0, width, rh), (0, (height - rh) // 2)
    ratio = (wr + hr) / 2.0  # half_crop
    rw, rh = max(1, py2_round(w / ratio)), _even(max(1, py2_round(h / ratio)), height)
    start = py2_round((rw - width) / 2.0)
    return (rw, rh), (start, 0, start + width, rh), (0, (height - rh) // 2)


def resize_image(img: Image.Image, width: int, height: int, mode: str, noise_seed: int) -> np.ndarray:
    """An "L"/"RGB" image -> uint8 (height, width, C), padding (fill, half_crop) with noise."""
    resized, (x0, y0, x1, y1), offset = plan_resize(img.size[0], img.size[1], width, height, mode)
    if img.size == (x1 - x0, y1 - y0) and resized == img.size:
        kept = img
    else:
        # Resize only the source box of the kept window: the same pixels as resize-then-crop.
        sx, sy = img.size[0] / resized[0], img.size[1] / resized[1]
        kept = img.resize((x1 - x0, y1 - y0), RESAMPLE, box=(x0 * sx, y0 * sy, x1 * sx, y1 * sy))
    pixels = np.asarray(kept, dtype=np.uint8)
    return placed(pixels if pixels.ndim == 3 else pixels[:, :, None], width, height, offset, noise_seed)


# -- the network input ------------------------------------------------------------------------
def mean_input(mean_hwc: np.ndarray | None, prep: dict) -> np.ndarray | None:
    """The mean to subtract, in 0..1: (C, h, w) for "image", (C, 1, 1) for "pixel"."""
    mode = prep.get("mean_mode", "none")
    if mode == "none" or mean_hwc is None:
        return None
    mean = np.asarray(mean_hwc, dtype=np.float32).transpose(2, 0, 1)
    if mode == "pixel":
        mean = mean.mean(axis=(1, 2), keepdims=True, dtype=np.float32)
    elif prep.get("crop"):
        mean = center_crop(mean, prep["crop"])
    return mean / np.float32(255.0)


def center_crop(x: np.ndarray, crop: int) -> np.ndarray:
    """The central crop x crop window of (..., H, W): offsets (size - crop) // 2, like Caffe."""
    h, w = x.shape[-2:]
    top, left = (h - crop) // 2, (w - crop) // 2
    return x[..., top:top + crop, left:left + crop]


def preprocess(images: list, prep: dict, mean: np.ndarray | None) -> np.ndarray:
    """Images -> float32 (N, C, h, w) network input; ``mean`` comes from mean_input."""
    size = (prep["width"], prep["height"], prep["resize"], prep.get("noise_seed", 0))
    arrays = [resize_array(img, *size) if isinstance(img, np.ndarray) else
              resize_image(to_mode(img, prep["channels"]), *size) for img in images]
    x = np.stack(arrays).transpose(0, 3, 1, 2)  # N, C, H, W uint8 (uint16 at 16 bits)
    if prep.get("crop"):
        x = center_crop(x, prep["crop"])
    x = x.astype(np.float32) * np.float32(1.0 / np.iinfo(x.dtype).max)
    if mean is not None:
        x = x - mean
    if prep.get("std"):  # weights fine-tuned from published ones expect their scaling too
        x = x / np.asarray(prep["std"], dtype=np.float32).reshape(1, -1, 1, 1)
    return np.ascontiguousarray(x, dtype=np.float32)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def sigmoid(logits: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -80, 80)))


def default_preprocess(session: ort.InferenceSession, mean: np.ndarray) -> dict:
    """Without preprocess.json: the mean's size, squash, image mean, crop to the network input."""
    _, channels, h, w = session.get_inputs()[0].shape
    height, width = mean.shape[:2]
    crop = h if isinstance(h, int) and (h, w) != (height, width) else None
    return {"width": width, "height": height, "channels": channels, "resize": "squash",
            "mean_mode": "image", "crop": crop, "noise_seed": 0}


# -- classifying ------------------------------------------------------------------------------
class Classifier:
    """An ONNX model with its labels, mean and preprocessing; `classify` gives top-k per image."""

    def __init__(self, model, labels: list[str], mean: np.ndarray, prep: dict | None = None,
                 cpu: bool = False):
        self.session = make_session(model, cpu)
        self.labels = labels
        self.prep = prep or default_preprocess(self.session, mean)
        self.mean = mean_input(mean, self.prep)
        self.input_name = self.session.get_inputs()[0].name
        # a multi-label model's threshold per label (preprocess.json): its scores are sigmoids
        self.thresholds = self.prep.get("thresholds")

    def load(self, path: str):
        if full_depth(self.prep):
            return load_array(path, self.prep["channels"], self.prep.get("depth", 8))
        return load_image(path, self.prep["channels"])

    def probabilities(self, images: list) -> np.ndarray:
        logits = self.session.run(None, {self.input_name: preprocess(images, self.prep, self.mean)})[0]
        return softmax(logits) if self.thresholds is None else sigmoid(logits)

    def classify(self, paths: list[str], batch_size: int = 32, top: int = 5) -> list[dict]:
        results = []
        for start in range(0, len(paths), batch_size):
            chunk = paths[start:start + batch_size]
            probs = self.probabilities([self.load(p) for p in chunk])
            for path, p in zip(chunk, probs):
                order = np.argsort(-p, kind="stable")
                result: dict = {"image": path, "predictions": [[self.labels[i], float(p[i])] for i in order[:top]]}
                if self.thresholds is not None:  # every label at or over its own threshold, best first
                    result["labels"] = [{"label": self.labels[i], "score": float(p[i])}
                                        for i in order if p[i] >= self.thresholds[i]]
                results.append(result)
        return results


def make_session(model, cpu: bool = False) -> ort.InferenceSession:
    """An InferenceSession on the best available provider (the CPU with ``cpu``)."""
    available = ort.get_available_providers()
    providers = ["CPUExecutionProvider"] if cpu else [p for p in PREFERRED_PROVIDERS if p in available]
    try:
        return ort.InferenceSession(model, providers=providers)
    except Exception:  # a GPU provider present but unusable (no driver): the CPU still works
        if providers == ["CPUExecutionProvider"]:
            raise
        return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def parse_labels(text: str) -> list[str]:
    """Class names of a labels.txt, one a line; blank lines are not classes."""
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def read_labels(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return parse_labels(f.read())


def print_results(results: list[dict], as_json: bool, seconds: float | None = None) -> None:
    """Print like DIGITS's example did, or one JSON document for machines."""
    if as_json:
        json.dump({"results": results}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    if seconds is not None:
        print(f"Classified {len(results)} image(s) in {seconds:.3f} seconds.", file=sys.stderr)
    for result in results:
        print("{:-^80}".format(f" Prediction for {result['image']} "))
        if "labels" in result:
            print("labels: " + (", ".join(f"{x['label']} ({x['score']:.4f})" for x in result["labels"]) or "none"))
        for label, p in result["predictions"]:
            print(f"{p:9.4%} - \"{label}\"")
        print()


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Classify images with a trainyard ONNX model.")
    parser.add_argument("model", help="model.onnx")
    parser.add_argument("images", nargs="+", help="image files")
    parser.add_argument("-l", "--labels", required=True, help="labels.txt (one class a line)")
    parser.add_argument("-m", "--mean", required=True, help="mean.npy (H, W, C) in 0..255")
    parser.add_argument("-p", "--preprocess", help="preprocess.json (else inferred from the mean)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--top", type=int, default=5, help="predictions per image")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--cpu", action="store_true", help="use the CPU even if a GPU provider exists")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = arguments(argv)
    prep = None
    if args.preprocess:
        with open(args.preprocess, encoding="utf-8") as f:
            prep = json.load(f)
    classifier = Classifier(args.model, read_labels(args.labels), np.load(args.mean, allow_pickle=False),
                            prep, cpu=args.cpu)
    start = time.perf_counter()
    results = classifier.classify(args.images, max(1, args.batch_size), args.top)
    print_results(results, args.json, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
