"""Helpers for the detection training tests: a built detection dataset of shapes, and specs.

The dataset is written straight in the stored layout (datasets/detection/store.py), with the
shapes of tests/detection_data.py at their exact boxes, so training tests do not wait for a
dataset build; tests/datasets/detection checks the build itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.detection_data import draw_image, shapes_truth
from trainyard.datasets.detection.store import write_detection_split
from trainyard.training.spec import ModelSpec

CLASSES = ("square", "disc")
NETWORK = "ssdlite320_mobilenet_v3_large"  # the quickest detector to train on a CPU


def make_detection_dataset(folder: Path, *, train: int = 48, val: int = 16, size: int = 96,
                           seed: int = 0, classes: tuple[str, ...] = CLASSES) -> Path:
    """A built detection dataset folder (info.json, labels.txt, train/, val/) of shapes."""
    folder.mkdir(parents=True, exist_ok=True)
    truth = shapes_truth(train + val, (size, size), classes, seed)
    rng = np.random.default_rng(seed + 1)
    images = [draw_image(shapes, (size, size), classes, rng) for shapes in truth]
    counts = {}
    for split, rows in (("train", range(train)), ("val", range(train, train + val))):
        boxes = [np.array([s.box for s in truth[i]], np.float32).reshape(-1, 4) for i in rows]
        labels = [np.array([classes.index(s.label) for s in truth[i]], np.int64) for i in rows]
        geometry = np.array([[1.0, 0.0, 0.0, size, size]] * len(rows), np.float32)
        write_detection_split(folder / split, [images[i] for i in rows], boxes, labels, geometry)
        counts[split] = {c: int(sum((lab == k).sum() for lab in labels)) for k, c in enumerate(classes)}
    info = {"version": 1, "name": "shapes", "task": "detection", "classes": list(classes), "counts": counts,
            "images": {"train": train, "val": val}, "skipped": [], "width": size, "height": size,
            "channels": 3, "resize": "pad", "encoding": "none"}
    (folder / "info.json").write_text(json.dumps(info))
    (folder / "labels.txt").write_text("".join(f"{c}\n" for c in classes))
    return folder


def detection_spec(dataset: Path, **overrides) -> ModelSpec:
    """A quick detection spec: SSDlite, 2 epochs, batch 8, Adam, seed 1 (then ``overrides``)."""
    fields = dict(dataset_id="ds1", dataset_dir=str(dataset), network=NETWORK, task="detection", epochs=2,
                  batch_size=8, seed=1, solver="adam", lr={"policy": "fixed", "base_lr": 0.001})
    fields.update(overrides)
    return ModelSpec(**fields)
