"""Reading and checking a model archive's small files: preprocess.json, labels.txt, mean.npy
and info.json's fields, each refused with ArchiveImportError saying which file and why."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from trainyard.artifact.preprocessing import Preprocessing, from_document
from trainyard.core.errors import UserError
from trainyard.core.files import read_json


class ArchiveImportError(UserError):
    """An archive that cannot be imported; the message says which file and why."""


def read_thresholds(found: object, classes: int) -> dict:
    """A multi-label classifier's thresholds (``found`` in preprocess.json: one a label, in 0..1)
    as its checkpoint holds them, else nothing."""
    if found is None:
        return {}
    if (not isinstance(found, list) or len(found) != classes
            or not all(isinstance(t, (int, float)) and 0 <= t <= 1 for t in found)):
        raise ArchiveImportError(f"preprocess.json's thresholds must be {classes} numbers in 0..1, one a label")
    return {"thresholds": [float(t) for t in found]}


def read_archive_json(root: Path, name: str) -> dict:
    try:
        doc = read_json(root / name)
    except (OSError, ValueError) as exc:
        raise ArchiveImportError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ArchiveImportError(f"{name} should hold a JSON object")
    return doc


def read_preprocess(doc: dict) -> tuple[Preprocessing, int]:
    """The checkpoint's preprocessing (without mean) and image size from preprocess.json, checked."""
    try:
        return from_document(doc)
    except ValueError as exc:
        raise ArchiveImportError(f"preprocess.json: {exc}") from None


def read_labels(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ArchiveImportError("labels.txt is not UTF-8 text") from None
    classes = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
    if len(classes) < 2:
        raise ArchiveImportError(f"labels.txt names {len(classes)} class(es); a classifier needs two or more")
    return classes


def read_mean(path: Path, prep: Preprocessing) -> np.ndarray:
    """mean.npy as float32 (H, W, C); read without pickle, shape checked against preprocess."""
    try:
        mean = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise ArchiveImportError(f"mean.npy cannot be read without pickle: {exc}") from None
    expected = prep.stored_shape
    if mean.shape != expected or not np.issubdtype(mean.dtype, np.number):
        raise ArchiveImportError(f"mean.npy has shape {mean.shape} ({mean.dtype}); expected {expected}")
    return np.ascontiguousarray(mean, dtype=np.float32)


def read_history(doc: object) -> dict[str, list[list[float]]]:
    """info.json's metric curves, keeping only well-formed [epoch, value] number pairs."""
    curves = {}
    for name, points in (doc.items() if isinstance(doc, dict) else ()):
        good = [[p[0], p[1]] for p in points if isinstance(p, list) and len(p) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in p)] \
            if isinstance(points, list) else []
        if isinstance(name, str) and good:
            curves[name] = good
    return curves


def read_number(value: Any, default: float) -> float:  # Any: info.json's, whatever the file holds
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if not math.isfinite(number) or number < 0:
        return default
    return int(number) if number.is_integer() else number
