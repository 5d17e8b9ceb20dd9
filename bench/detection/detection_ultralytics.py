"""The Ultralytics side of bench/detection/detection.py: YOLOv8n from its yaml (no weights), offline.

Ultralytics is never a dependency of trainyard: install it into a folder of its own
(``pip download ultralytics`` then ``pip install --target SITE --no-deps`` with its missing
requirements) and pass ``--ultralytics SITE``. The same images as the other sides are written as
a YOLO dataset (images/ and labels/ per split, a data yaml); YOLOv8n trains in its own Python
process with the same epochs, batch size, image size and Adam learning rate, augmentation and
plots off, validating each epoch. Returns what it measured, or why it could not run.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

TRAIN = """
import sys
from ultralytics import YOLO
data, epochs, batch, size, lr, project = sys.argv[1:7]
YOLO("yolov8n.yaml").train(data=data, epochs=int(epochs), batch=int(batch), imgsz=int(size), lr0=float(lr),
    optimizer="Adam", device="cpu", workers=0, plots=False, amp=False, seed=1, deterministic=True,
    project=project, name="run", exist_ok=True, pretrained=False, verbose=False, mosaic=0.0, fliplr=0.0,
    hsv_h=0.0, hsv_s=0.0, hsv_v=0.0, translate=0.0, scale=0.0, erasing=0.0, auto_augment=None,
    close_mosaic=0, warmup_epochs=0, cos_lr=False, lrf=1.0)
"""


def write_yolo(folder: Path, splits: dict[str, tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]],
               classes: tuple[str, ...]) -> Path:
    """images/<split>/*.png and labels/<split>/*.txt (class cx cy w h, 0..1) and data.yaml."""
    for split, (images, boxes, labels) in splits.items():
        (folder / "images" / split).mkdir(parents=True)
        (folder / "labels" / split).mkdir(parents=True)
        for i, (pixels, b, k) in enumerate(zip(images, boxes, labels)):
            Image.fromarray(pixels).save(folder / "images" / split / f"{i:05d}.png")
            h, w = pixels.shape[:2]
            lines = [f"{int(c)} {(x1 + x2) / 2 / w:.6f} {(y1 + y2) / 2 / h:.6f} {(x2 - x1) / w:.6f} {(y2 - y1) / h:.6f}"
                     for (x1, y1, x2, y2), c in zip(b.reshape(-1, 4), k)]
            (folder / "labels" / split / f"{i:05d}.txt").write_text("".join(f"{line}\n" for line in lines))
    names = "".join(f"  {i}: {name}\n" for i, name in enumerate(classes))
    data = folder / "data.yaml"
    data.write_text(f"path: {folder}\ntrain: images/train\nval: images/val\nnames:\n{names}")
    return data


def run(site: Path, data: Path, work: Path, *, epochs: int, batch: int, size: int, lr: float,
        threads: int, train_images: int) -> dict | str:
    """{"map50": [...], "images_per_second", "cpu_s", "wall_s"}, or the reason it did not run."""
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": str(threads), "CUDA_VISIBLE_DEVICES": "",
           "YOLO_OFFLINE": "1", "YOLO_CONFIG_DIR": str(work / "config"), "MPLBACKEND": "Agg"}
    before, start = os.times(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", TRAIN, str(data), str(epochs), str(batch), str(size), str(lr),
                           str(work / "runs")], env=env, capture_output=True, text=True, cwd=work)
    wall, after = time.perf_counter() - start, os.times()
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()
        return f"Ultralytics did not run: {tail[-1] if tail else f'exit code {done.returncode}'}"
    rows = list(csv.DictReader((work / "runs" / "run" / "results.csv").open()))
    rows = [{k.strip(): v for k, v in row.items()} for row in rows]
    seconds = [float(row["time"]) for row in rows]  # cumulative, training and validation
    per_epoch = np.diff([0.0, *seconds])
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"map50": [float(row["metrics/mAP50(B)"]) for row in rows],
            "images_per_second": float(np.median(train_images / per_epoch)), "cpu_s": cpu, "wall_s": wall}
