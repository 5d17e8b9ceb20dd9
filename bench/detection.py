"""Benchmark trainyard's detector training against a hand-written torchvision detection loop.

The same data (shapes on textured backgrounds, exact boxes: tests/detection_data.py's drawing),
the same model (SSDlite / MobileNet V3 at the stored 96x96 size, torchvision's own transform
kept from upscaling), the same solver (Adam, fixed LR), batch size, epochs and seed, no
augmentation on either side, each side started the same way: its own Python process.

  trainyard   a model job folder run by the job's entry point (python -m trainyard.training.run):
              DetectionBatchLoader over the stored split, the loop, validation by COCO mAP
              (torchmetrics) every epoch, a checkpoint at the end
  reference   torchvision's reference-script shape written out by hand: a Dataset over the same
              stored arrays, DataLoader with a list collate, sum of the loss dict, the same
              torchmetrics mAP on the same validation images every epoch

Prints mAP@0.5 per epoch for both, training images/s, CPU-seconds and wall seconds of each
process, and the ratios (trainyard / reference).

    python bench/detection.py [--train 96] [--val 32] [--epochs 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.detection_data: the shapes the tests train on

NETWORK = "ssdlite320_mobilenet_v3_large"
SIZE = 96
CLASSES = ("disc", "square")


def write_dataset(folder: Path, train: int, val: int) -> Path:
    from tests.detection_data import draw_image, shapes_truth
    from trainyard.datasets.detection.store import write_detection_split

    truth = shapes_truth(train + val, (SIZE, SIZE), CLASSES, seed=0)
    rng = np.random.default_rng(1)
    images = [draw_image(shapes, (SIZE, SIZE), CLASSES, rng) for shapes in truth]
    for split, rows in (("train", range(train)), ("val", range(train, train + val))):
        write_detection_split(folder / split, [images[i] for i in rows],
                              [np.array([s.box for s in truth[i]], np.float32).reshape(-1, 4) for i in rows],
                              [np.array([CLASSES.index(s.label) for s in truth[i]], np.int64) for i in rows],
                              np.array([[1.0, 0, 0, SIZE, SIZE]] * len(rows), np.float32))
    info = {"version": 1, "name": "shapes", "task": "detection", "classes": list(CLASSES), "width": SIZE,
            "height": SIZE, "channels": 3, "resize": "pad", "encoding": "none"}
    (folder / "info.json").write_text(json.dumps(info))
    (folder / "labels.txt").write_text("".join(f"{c}\n" for c in CLASSES))
    return folder


def run_side(side: str, dataset: Path, work: Path, args) -> dict:
    """Run one side in its own process; its CPU-seconds and wall time, and what it reported."""
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "CUDA_VISIBLE_DEVICES": ""}
    if side == "trainyard":
        job = work / "job"
        job.mkdir()
        spec = {"dataset_id": "bench", "dataset_dir": str(dataset), "network": NETWORK, "task": "detection",
                "epochs": args.epochs, "batch_size": args.batch, "seed": 1, "solver": "adam",
                "lr": {"policy": "fixed", "base_lr": args.lr}, "weight_decay": 0,
                "snapshot_interval": 0, "val_interval": 1}
        (job / "spec.json").write_text(json.dumps(spec))
        command = [sys.executable, "-m", "trainyard.training.run", str(job)]
    else:
        command = [sys.executable, __file__, "--reference", str(dataset), "--out", str(work / "reference.json"),
                   "--epochs", str(args.epochs), "--batch", str(args.batch), "--lr", str(args.lr)]
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if side == "trainyard":
        report = _trainyard_report(work / "job")
    else:
        report = json.loads((work / "reference.json").read_text())
    return {**report, "cpu_s": cpu, "wall_s": wall}


def _trainyard_report(job: Path) -> dict:
    from trainyard.core.events import read_events

    events = [e for e in read_events(job / "events.jsonl", {"metric"})]
    map50 = [e["value"] for e in events if e["name"] == "val_map50"]
    speed = [e["value"] for e in events if e["name"] == "images_per_second"]
    return {"map50": map50, "images_per_second": float(np.median(speed)) if speed else None}


def reference(dataset: Path, out: Path, epochs: int, batch: int, lr: float) -> None:
    """The hand-written torchvision loop (what a user would write from the reference scripts)."""
    import torch
    from torchmetrics.detection import MeanAveragePrecision
    from torchvision.models import detection

    from trainyard.datasets.detection.store import DetectionSplit

    torch.manual_seed(1)
    train, val = DetectionSplit(dataset / "train"), DetectionSplit(dataset / "val")

    class Shapes(torch.utils.data.Dataset):
        def __init__(self, split):
            self.split = split

        def __len__(self):
            return len(self.split)

        def __getitem__(self, i):
            image = torch.from_numpy(self.split.images(np.array([i]))[0]).permute(2, 0, 1).float() / 255
            boxes, labels = self.split.targets(i)
            return image, {"boxes": torch.from_numpy(boxes), "labels": torch.from_numpy(labels) + 1}

    def collate(batch):
        return tuple(zip(*batch))

    loader = torch.utils.data.DataLoader(Shapes(train), batch_size=batch, shuffle=True, drop_last=True,
                                         collate_fn=collate)
    val_loader = torch.utils.data.DataLoader(Shapes(val), batch_size=batch, collate_fn=collate)
    model = detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=len(CLASSES) + 1)
    model.transform.fixed_size = (SIZE, SIZE)
    model.transform.min_size, model.transform.max_size = (SIZE,), SIZE
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    map50, speeds = [], []
    for _ in range(epochs):
        model.train()
        start, seen = time.perf_counter(), 0
        for images, targets in loader:
            loss = sum(model(list(images), list(targets)).values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen += len(images)
        speeds.append(seen / (time.perf_counter() - start))
        model.eval()
        metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="pycocotools")
        with torch.no_grad():
            for images, targets in val_loader:
                found = model(list(images))
                metric.update([{k: v for k, v in f.items()} for f in found], list(targets))
        map50.append(float(metric.compute()["map_50"]))
    out.write_text(json.dumps({"map50": map50, "images_per_second": float(np.median(speeds))}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=96)
    parser.add_argument("--val", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reference", type=Path, help=argparse.SUPPRESS)  # the reference side's process
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reference:
        reference(args.reference, args.out, args.epochs, args.batch, args.lr)
        return
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-detection-") as tmp:
        dataset = write_dataset(Path(tmp) / "dataset", args.train, args.val)
        results = {}
        for side in ("trainyard", "reference"):
            (Path(tmp) / side).mkdir()
            results[side] = run_side(side, dataset, Path(tmp) / side, args)
    ours, theirs = results["trainyard"], results["reference"]
    print(f"{NETWORK} at {SIZE}x{SIZE}, {args.train} training / {args.val} validation images, batch {args.batch}, "
          f"Adam {args.lr:g}, {args.epochs} epochs, {args.threads} threads, load average {os.getloadavg()[0]:.2f}")
    print("epoch  mAP@0.5 trainyard  reference")
    for epoch, (a, b) in enumerate(zip(ours["map50"], theirs["map50"]), 1):
        print(f"{epoch:5d}  {a:17.3f}  {b:9.3f}")
    for name, unit in (("images_per_second", "training images/s"), ("cpu_s", "CPU-seconds"), ("wall_s", "wall s")):
        print(f"{unit:>18}: trainyard {ours[name]:8.1f}  reference {theirs[name]:8.1f}  "
              f"ratio {ours[name] / theirs[name]:.2f}")
    print(json.dumps({"trainyard": ours, "reference": theirs}))


if __name__ == "__main__":
    main()
