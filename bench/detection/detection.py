"""Benchmark trainyard's detector training against a hand-written torchvision detection loop.

The same data (shapes on textured backgrounds, exact boxes: tests/detection_data.py's drawing),
the same model (SSDlite / MobileNet V3 by default, or a custom network file such as the editor's
detection template with ``--network-file``, at the stored size, torchvision's own transform kept
from upscaling), the same solver (Adam, fixed LR), batch size, epochs and seed, no augmentation
on either side, each side started the same way: its own Python process. A wrong-box baseline
(random boxes, labels and scores on the same validation images) says what mAP means nothing.
``--ultralytics`` adds a YOLOv8n side (bench/detection/detection_ultralytics.py) where Ultralytics installs.

  trainyard   a model job folder run by the job's entry point (python -m trainyard.training.run):
              DetectionBatchLoader over the stored split, the loop, validation by COCO mAP
              (torchmetrics) every epoch, a checkpoint at the end
  reference   torchvision's reference-script shape written out by hand (bench/detection/detection_reference.py):
              a Dataset over the same stored arrays, DataLoader with a list collate, sum of the
              loss dict, the same torchmetrics mAP on the same validation images every epoch,
              and a validation loss, as trainyard reports one: a second pass over each
              validation batch in training mode (BatchNorm kept in eval, no gradient)

Both sides do the same work: the reference's validation loss is there because trainyard's
validation computes one, and without it the hand loop would be timed doing less (its first
versions were: trainyard's val-loss pass was its whole lead). Prints mAP@0.5 and the validation
loss per epoch for both, training images/s, CPU-seconds and wall seconds of each
process, and the ratios (trainyard / reference).

    python bench/detection/detection.py [--train 96] [--val 32] [--epochs 10] [--threads 2] [--size 96] [--seeds 1,2,3]
        [--network-file src/trainyard/networks/custom_detection.py's TEMPLATE saved as FILE.py]
        [--ultralytics SITE]  # a folder Ultralytics was pip-installed into with --target
        [--phases]  # and where each side's time goes: start-up, training, validation, mAP
                    # (bench/detection/detection_phases.py)
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.detection_data: the shapes the tests train on
from bench.detection import detection_phases as phases  # noqa: E402  (after ROOT is on the path)

NETWORK = "ssdlite320_mobilenet_v3_large"
CLASSES = ("disc", "square")


def write_dataset(folder: Path, train: int, val: int, size: int) -> Path:
    from tests.detection_data import draw_image, shapes_truth
    from trainyard.datasets.detection.store import write_detection_split

    truth = shapes_truth(train + val, (size, size), CLASSES, seed=0)
    rng = np.random.default_rng(1)
    images = [draw_image(shapes, (size, size), CLASSES, rng) for shapes in truth]
    for split, rows in (("train", range(train)), ("val", range(train, train + val))):
        write_detection_split(folder / split, [images[i] for i in rows],
                              [np.array([s.box for s in truth[i]], np.float32).reshape(-1, 4) for i in rows],
                              [np.array([CLASSES.index(s.label) for s in truth[i]], np.int64) for i in rows],
                              np.array([[1.0, 0, 0, size, size]] * len(rows), np.float32))
    info = {"version": 1, "name": "shapes", "task": "detection", "classes": list(CLASSES), "width": size,
            "height": size, "channels": 3, "resize": "pad", "encoding": "none"}
    (folder / "info.json").write_text(json.dumps(info))
    (folder / "labels.txt").write_text("".join(f"{c}\n" for c in CLASSES))
    return folder


def run_side(side: str, dataset: Path, work: Path, args, seed: int = 1) -> dict:
    """Run one side in its own process (from ``seed``: its initial weights and batch order); its
    CPU-seconds and wall time, and what it reported."""
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "CUDA_VISIBLE_DEVICES": ""}
    if side == "trainyard":
        job = work / "job"
        job.mkdir()
        network = ({"network_source": Path(args.network_file).read_text()} if args.network_file
                   else {"network": NETWORK})
        spec = {"dataset_id": "bench", "dataset_dir": str(dataset), **network, "task": "detection",
                "epochs": args.epochs, "batch_size": args.batch, "seed": seed, "solver": "adam",
                "lr": {"policy": "fixed", "base_lr": args.lr}, "weight_decay": 0,
                "snapshot_interval": 0, "val_interval": 1}
        (job / "spec.json").write_text(json.dumps(spec))
        command = ["-m", "trainyard.training.run", str(job)]
    else:
        hand_loop = Path(__file__).with_name("detection_reference.py")
        command = [str(hand_loop), str(dataset), str(work / "reference.json"),
                   "--epochs", str(args.epochs), "--batch", str(args.batch), "--lr", str(args.lr),
                   "--size", str(args.size), "--seed", str(seed),
                   *(["--network-file", args.network_file] if args.network_file else [])]
    timed = work / "phases.json"  # --phases: the same command under bench/detection/detection_phases.py's timers
    wrap = [phases.__file__, str(timed), "--"] if args.phases else []
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *wrap, *command], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if side == "trainyard":
        report = _trainyard_report(work / "job")
    else:
        report = json.loads((work / "reference.json").read_text())
    if args.phases:
        report["phases"] = json.loads(timed.read_text())
    return {**report, "cpu_s": cpu, "wall_s": wall}


def _trainyard_report(job: Path) -> dict:
    from trainyard.core.events import read_events

    events = [e for e in read_events(job / "events.jsonl", {"metric"})]
    map50, val_loss = ([e["value"] for e in events if e["name"] == name] for name in ("val_map50", "val_loss"))
    speed = [e["value"] for e in events if e["name"] == "images_per_second"]
    return {"map50": map50, "val_loss": val_loss, "images_per_second": float(np.median(speed)) if speed else None}


def wrong_box_baseline(dataset: Path, seed: int = 0) -> float:
    """mAP@0.5 of a model that answers 3 random boxes, labels and scores per validation image."""
    import torch
    from torchmetrics.detection import MeanAveragePrecision

    from trainyard.datasets.detection.store import DetectionSplit

    val, rng = DetectionSplit(dataset / "val"), np.random.default_rng(seed)
    height, width = val.images(np.array([0]))[0].shape[:2]
    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="pycocotools")
    for i in range(len(val)):
        boxes, labels = val.targets(i)
        corner = rng.uniform(0, 1, (3, 2)) * [width * 0.7, height * 0.7]
        side = rng.uniform(0.1, 0.3, (3, 1)) * min(width, height)
        guess = np.concatenate([corner, corner + side], axis=1)
        metric.update([{"boxes": torch.tensor(guess, dtype=torch.float32), "scores": torch.tensor(rng.uniform(0, 1, 3)),
                        "labels": torch.tensor(rng.integers(0, len(CLASSES), 3))}],
                      [{"boxes": torch.from_numpy(boxes).reshape(-1, 4), "labels": torch.from_numpy(labels)}])
    return float(metric.compute()["map_50"])


def ultralytics_side(dataset: Path, work: Path, args) -> dict | str:
    """YOLOv8n on the same images (bench/detection/detection_ultralytics.py), or why it did not run."""
    from bench.detection.detection_ultralytics import run, write_yolo

    from trainyard.datasets.detection.store import DetectionSplit

    if not (Path(args.ultralytics) / "ultralytics").is_dir():
        return f"Ultralytics is not installed in {args.ultralytics} (pip install --target it there)"
    splits = {}
    for split in ("train", "val"):
        stored = DetectionSplit(dataset / split)
        targets = [stored.targets(i) for i in range(len(stored))]
        splits[split] = (list(stored.images(np.arange(len(stored)))), [t[0] for t in targets], [t[1] for t in targets])
    data = write_yolo(work / "yolo", splits, CLASSES)
    return run(Path(args.ultralytics), data, work, epochs=args.epochs, batch=args.batch, size=args.size, lr=args.lr,
               threads=args.threads, train_images=args.train)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=96)
    parser.add_argument("--val", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--seeds", default="1", help="comma-separated seeds: each side runs once per seed, "
                        "alternating, and mAP is reported per seed and as their mean")
    parser.add_argument("--network-file", help="a custom detection network file both sides train")
    parser.add_argument("--phases", action="store_true", help="time each side's phases (detection_phases.py)")
    parser.add_argument("--ultralytics", help="a folder Ultralytics is pip-installed into (--target)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-detection-") as tmp:
        dataset = write_dataset(Path(tmp) / "dataset", args.train, args.val, args.size)
        baseline = wrong_box_baseline(dataset)
        runs: dict[str, list[dict]] = {"trainyard": [], "reference": []}
        for seed in seeds:  # alternating, so a change of load falls on both sides alike
            for side in runs:
                (Path(tmp) / f"{side}-{seed}").mkdir()
                runs[side].append(run_side(side, dataset, Path(tmp) / f"{side}-{seed}", args, seed))
        results: dict = {side: _combined(each) for side, each in runs.items()}
        if args.ultralytics:
            (Path(tmp) / "ultralytics").mkdir()
            results["ultralytics"] = ultralytics_side(dataset, Path(tmp) / "ultralytics", args)
    report(results, baseline, args, seeds)


def _combined(runs: list[dict]) -> dict:
    """One side over its seeds: mAP per epoch per seed and their mean, the mean validation loss,
    the median images/s, and the CPU and wall seconds of all its runs together."""
    per_seed = [r["map50"] for r in runs]
    return {"map50": [float(np.mean(epoch)) for epoch in zip(*per_seed)], "map50_per_seed": per_seed,
            "val_loss": [float(np.mean(epoch)) for epoch in zip(*[r["val_loss"] for r in runs])],
            "images_per_second": float(np.median([r["images_per_second"] for r in runs])),
            "cpu_s": sum(r["cpu_s"] for r in runs), "wall_s": sum(r["wall_s"] for r in runs),
            **({"phases": phases.summed([r["phases"] for r in runs])} if "phases" in runs[0] else {})}


def report(results: dict, baseline: float, args, seeds: list[int]) -> None:
    ours, theirs = results["trainyard"], results["reference"]
    yolo = results.get("ultralytics")
    network = Path(args.network_file).name if args.network_file else NETWORK
    print(f"{network} at {args.size}x{args.size}, {args.train} training / {args.val} validation images, "
          f"batch {args.batch}, Adam {args.lr:g}, {args.epochs} epochs, {args.threads} threads, "
          f"seeds {','.join(map(str, seeds))}, load average {os.getloadavg()[0]:.2f}")
    print(f"wrong-box baseline (3 random boxes an image) mAP@0.5: {baseline:.3f}")
    extra = isinstance(yolo, dict)
    print("epoch  mAP@0.5 trainyard  reference  val loss trainyard  reference"
          + ("  ultralytics yolov8n" if extra else "")
          + ("   (mean over seeds; per seed: trainyard | reference)" if len(seeds) > 1 else ""))
    for epoch, (a, b, la, lb) in enumerate(zip(ours["map50"], theirs["map50"], ours["val_loss"],
                                               theirs["val_loss"]), 1):
        c = f"  {yolo['map50'][epoch - 1]:19.3f}" if extra and epoch <= len(yolo["map50"]) else ""
        each = "" if len(seeds) == 1 else "   " + " ".join(
            f"{run[epoch - 1]:.3f}" for run in ours["map50_per_seed"]) + " | " + " ".join(
            f"{run[epoch - 1]:.3f}" for run in theirs["map50_per_seed"])
        print(f"{epoch:5d}  {a:17.3f}  {b:9.3f}  {la:18.4f}  {lb:9.4f}{c}{each}")
    for name, unit in (("images_per_second", "training images/s"), ("cpu_s", "CPU-seconds"), ("wall_s", "wall s")):
        line = (f"{unit:>18}: trainyard {ours[name]:8.1f}  reference {theirs[name]:8.1f}  "
                f"ratio {ours[name] / theirs[name]:.2f}")
        if extra:
            line += f"  ultralytics {yolo[name]:8.1f}  trainyard/ultralytics {ours[name] / yolo[name]:.2f}"
        print(line)
    if extra:
        print("(ultralytics images/s counts each epoch's validation too: its results.csv times both)")
    elif yolo is not None:
        print(yolo)  # why Ultralytics did not run
    if "phases" in ours:
        print(phases.table({"trainyard": ours["phases"], "reference": theirs["phases"]}))
    print(json.dumps({**results, "wrong_box_baseline": baseline}))


if __name__ == "__main__":
    main()
