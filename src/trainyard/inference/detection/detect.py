"""Boxes for images: fit each image as the dataset was built, detect, map boxes back.

An image is fitted to the stored size by the dataset's resize mode (pad: letterbox, or squash;
datasets/detection/geometry.py, the build's own code), the detector runs on the batch, and each
box goes back to the image's own pixels, ``original = (stored - pad) / scale`` per axis, clipped
to the image. Boxes under ``threshold`` are dropped; the rest come best first:

    {"image": name, "boxes": [{"label": name, "score": 0..1, "box": [x1, y1, x2, y2]}, ...]}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from trainyard.datasets.detection.geometry import Fit, fit_image, plan_fit
from trainyard.inference.detection.detector import LoadedDetector

DEFAULT_THRESHOLD = 0.5
BATCH = 16


def fitted(loaded: LoadedDetector, image: Image.Image) -> tuple[np.ndarray, Fit]:
    """(the stored-size (H, W, C) pixels of ``image``, how it was fitted)."""
    prep = loaded.preprocess
    mode = prep.resize if prep.resize in ("pad", "squash") else "pad"
    image = image.convert("L" if prep.channels == 1 else "RGB")
    return fit_image(image, prep.width, prep.height, mode), plan_fit(image.size, prep.width, prep.height, mode)


def to_original(boxes: np.ndarray, fit: Fit) -> np.ndarray:
    """(b, 4) stored-pixel boxes -> the original image's pixels, inside the image."""
    out = np.asarray(boxes, np.float64).reshape(-1, 4).copy()
    w, h = fit.original
    out[:, 0::2] = np.clip((out[:, 0::2] - fit.pad_x) / fit.scale_x, 0, w)
    out[:, 1::2] = np.clip((out[:, 1::2] - fit.pad_y) / fit.scale_y, 0, h)
    return out


def result_doc(name: str, found: dict[str, np.ndarray], fit: Fit, classes: list[str], threshold: float) -> dict:
    """One image's result: its boxes at or above ``threshold``, best first, in original pixels."""
    keep = found["scores"] >= threshold
    boxes = to_original(found["boxes"][keep], fit)
    scores, labels = found["scores"][keep], found["labels"][keep]
    order = np.argsort(-scores, kind="stable")
    return {"image": name, "boxes": [
        {"label": classes[int(labels[i])] if 0 <= labels[i] < len(classes) else str(int(labels[i])),
         "score": round(float(scores[i]), 6), "box": [round(float(v), 2) for v in boxes[i]]}
        for i in order]}


def detect(loaded: LoadedDetector, images: Sequence[tuple[str, Image.Image]],
           threshold: float = DEFAULT_THRESHOLD) -> list[dict]:
    """One result per (name, image), in order."""
    return detect_fitted(loaded, [(name, *fitted(loaded, image)) for name, image in images], threshold)


def detect_fitted(loaded: LoadedDetector, prepared: Sequence[tuple[str, np.ndarray, Fit]],
                  threshold: float = DEFAULT_THRESHOLD) -> list[dict]:
    """One result per (name, stored-size pixels, fit) (`fitted`'s), in order."""
    results = []
    for start in range(0, len(prepared), BATCH):
        chunk = prepared[start:start + BATCH]
        found = loaded.boxes(np.stack([pixels for _, pixels, _ in chunk]))
        results += [result_doc(name, f, fit, loaded.classes, threshold) for (name, _, fit), f in zip(chunk, found)]
    return results


def model_doc(loaded: LoadedDetector, epoch: float | None) -> dict:
    """What a detect response says about the detector that answered."""
    p = loaded.preprocess
    return {"epoch": epoch, "network": loaded.network, "classes": loaded.classes,
            "input": {"width": p.width, "height": p.height, "channels": p.channels, "resize": p.resize}}
