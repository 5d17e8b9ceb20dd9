"""Benchmark trainyard's YOLO detector against Ultralytics YOLOv8n, each with its own default recipe.

One hard generated set (bench/detection/detection_hard_set.py: five shape classes of random colour, varied
sizes and aspect ratios, textured backgrounds, distractors, up to six objects an image) split
into train / val / test. trainyard trains ``--network`` (yolo_n) with the recipe its registry
entry recommends (NetworkInfo.recipe) through its job entry point (python -m
trainyard.training.run); Ultralytics trains YOLOv8n from its yaml, no weights, with its own
defaults (mosaic, HSV, flips, warm-up, EMA, its optimizer choice: nothing overridden but the
epochs, image size, batch, device and plots), in a throwaway install (``--ultralytics SITE``,
never a dependency of trainyard: ``pip download ultralytics`` then ``pip install --target SITE
--no-deps`` with its missing requirements). Same images, epochs, image size, batch and threads.

Both final models answer the test images at score >= 0.001 and torchmetrics scores them
(mAP@0.5:0.95, mAP@0.5). Training CPU-seconds are each training process's (children's user +
system), which includes each side's own per-epoch validation.

    python bench/detection/detection_yolo.py --ultralytics /tmp/ultra [--epochs 15] [--images 600] [--threads 1]
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
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its siblings, whichever way it is started
from detection_hard_set import CLASSES, draw_set  # noqa: E402  (a sibling script, not a package)
from detection_ultralytics import write_yolo  # noqa: E402

ULTRALYTICS_TRAIN = """
import sys
from ultralytics import YOLO
data, epochs, batch, size, project = sys.argv[1:6]
YOLO("yolov8n.yaml").train(data=data, epochs=int(epochs), batch=int(batch), imgsz=int(size), device="cpu",
    workers=0, plots=False, amp=False, seed=1, project=project, name="run", exist_ok=True, pretrained=False,
    verbose=False)
"""
ULTRALYTICS_PREDICT = """
import json, sys
import numpy as np
from ultralytics import YOLO
weights, images, size, out = sys.argv[1:5]
model = YOLO(weights)
found = []
for pixels in np.load(images):
    r = model.predict(np.ascontiguousarray(pixels[..., ::-1]), conf=0.001, iou=0.7, imgsz=int(size), max_det=300,
                      device="cpu", verbose=False)[0].boxes
    found.append({"boxes": r.xyxy.tolist(), "scores": r.conf.tolist(), "labels": r.cls.int().tolist()})
json.dump(found, open(out, "w"))
"""


def write_store(folder: Path, splits: dict, width: int, height: int) -> Path:
    from trainyard.datasets.detection.store import write_detection_split

    for split in ("train", "val"):
        images, boxes, labels = splits[split]
        write_detection_split(folder / split, images, boxes, labels,
                              np.array([[1.0, 0, 0, width, height]] * len(images), np.float32))
    info = {"version": 1, "name": "hard-shapes", "task": "detection", "classes": list(CLASSES), "width": width,
            "height": height, "channels": 3, "resize": "pad", "encoding": "none"}
    (folder / "info.json").write_text(json.dumps(info))
    (folder / "labels.txt").write_text("".join(f"{c}\n" for c in CLASSES))
    return folder


def timed(command: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(CPU-seconds, wall seconds) of ``command`` run to its end; SystemExit if it fails."""
    before, start = os.times(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=cwd)
    wall, after = time.perf_counter() - start, os.times()
    if done.returncode != 0:
        raise SystemExit(f"{command[:3]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return (after.children_user - before.children_user) + (after.children_system - before.children_system), wall


def trainyard_side(dataset: Path, work: Path, test: list[np.ndarray], args) -> dict:
    from trainyard.inference.detection.detector import load_detector
    from trainyard.networks.table import get_network

    job = work / "job"
    job.mkdir(parents=True)
    recipe = get_network(args.network).recipe_settings()
    spec = {"dataset_id": "bench", "dataset_dir": str(dataset), "network": args.network, "task": "detection",
            **recipe, "epochs": args.epochs, "batch_size": args.batch, "seed": 1, "snapshot_interval": 0,
            "val_interval": 1}
    (job / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "CUDA_VISIBLE_DEVICES": ""}
    cpu, wall = timed([sys.executable, "-m", "trainyard.training.run", str(job)], env, work)
    (checkpoint,) = sorted(job.glob("**/checkpoints/*.pt"))[-1:]
    detector = load_detector(checkpoint)
    found = [detector.boxes(image[None])[0] for image in test]
    return {"recipe": recipe, "predictions": found, "cpu_s": cpu, "wall_s": wall}


def ultralytics_side(splits: dict, work: Path, test: list[np.ndarray], args) -> dict:
    data = write_yolo(work / "yolo", {s: splits[s] for s in ("train", "val")}, CLASSES)
    env = {**os.environ, "PYTHONPATH": args.ultralytics, "OMP_NUM_THREADS": str(args.threads),
           "CUDA_VISIBLE_DEVICES": "", "YOLO_OFFLINE": "1", "YOLO_CONFIG_DIR": str(work / "config"),
           "MPLBACKEND": "Agg"}
    size = str(max(args.width, args.height))
    cpu, wall = timed([sys.executable, "-c", ULTRALYTICS_TRAIN, str(data), str(args.epochs), str(args.batch), size,
                       str(work / "runs")], env, work)
    np.save(work / "test.npy", np.stack(test))
    timed([sys.executable, "-c", ULTRALYTICS_PREDICT, str(work / "runs" / "run" / "weights" / "last.pt"),
           str(work / "test.npy"), size, str(work / "found.json")], env, work)
    found = [{k: np.array(v, np.float32 if k != "labels" else np.int64).reshape(-1, 4) if k == "boxes"
              else np.array(v, np.float32 if k != "labels" else np.int64) for k, v in row.items()}
             for row in json.loads((work / "found.json").read_text())]
    return {"predictions": found, "cpu_s": cpu, "wall_s": wall}


def score(predictions: list[dict], boxes: list[np.ndarray], labels: list[np.ndarray]) -> dict[str, float]:
    import torch
    from torchmetrics.detection import MeanAveragePrecision

    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="pycocotools")
    for p, b, k in zip(predictions, boxes, labels):
        keep = np.asarray(p["scores"]) >= 0.001
        metric.update([{"boxes": torch.as_tensor(np.asarray(p["boxes"]).reshape(-1, 4)[keep], dtype=torch.float32),
                        "scores": torch.as_tensor(np.asarray(p["scores"])[keep], dtype=torch.float32),
                        "labels": torch.as_tensor(np.asarray(p["labels"])[keep], dtype=torch.int64)}],
                      [{"boxes": torch.from_numpy(b), "labels": torch.from_numpy(k)}])
    result = metric.compute()
    return {"map": float(result["map"]), "map50": float(result["map_50"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=600, help="all splits together: 70 / 15 / 15 %%")
    parser.add_argument("--width", type=int, default=160)
    parser.add_argument("--height", type=int, default=120)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--network", default="yolo_n")
    parser.add_argument("--ultralytics", help="a folder Ultralytics is pip-installed into (--target); "
                        "without it only trainyard's side runs")
    parser.add_argument("--sides", default="trainyard,ultralytics", help="which sides to run")
    args = parser.parse_args()
    images, boxes, labels = draw_set(args.images, args.width, args.height, seed=0)
    cut = [int(args.images * 0.7), int(args.images * 0.85)]
    splits = {name: tuple(part[a:b] for part in (images, boxes, labels))
              for name, a, b in (("train", 0, cut[0]), ("val", cut[0], cut[1]), ("test", cut[1], args.images))}
    test_images, test_boxes, test_labels = splits["test"]
    results = {}
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-yolo-") as tmp:
        dataset = write_store(Path(tmp) / "dataset", splits, args.width, args.height)
        if "trainyard" in args.sides:
            results["trainyard"] = trainyard_side(dataset, Path(tmp) / "trainyard", test_images, args)
        if args.ultralytics and "ultralytics" in args.sides:
            results["ultralytics"] = ultralytics_side(splits, Path(tmp) / "ultralytics", test_images, args)
    for side in results.values():
        side.update(score(side.pop("predictions"), test_boxes, test_labels))
    report(results, args)


def report(results: dict, args) -> None:
    ours, theirs = results.get("trainyard"), results.get("ultralytics")
    print(f"{args.images} images {args.width}x{args.height} (train/val/test {int(args.images * 0.7)}/"
          f"{int(args.images * 0.85) - int(args.images * 0.7)}/{args.images - int(args.images * 0.85)}), "
          f"{len(CLASSES)} classes, {args.epochs} epochs, batch {args.batch}, {args.threads} thread(s), "
          f"load average {os.getloadavg()[0]:.2f}")
    if ours:
        print(f"trainyard {args.network} recipe: {json.dumps(ours['recipe'])}")
    print(f"{'':24} {'test mAP@0.5:0.95':>18} {'test mAP@0.5':>13} {'training CPU-s':>15} {'wall s':>8}")
    rows = [(name, side) for name, side in ((f"trainyard {args.network}", ours), ("ultralytics yolov8n", theirs))
            if side]
    for name, side in rows:
        print(f"{name:24} {side['map']:18.3f} {side['map50']:13.3f} {side['cpu_s']:15.1f} {side['wall_s']:8.1f}")
    if ours and theirs:
        print(f"{'ratio trainyard/ultra':24} {ours['map'] / max(theirs['map'], 1e-9):18.2f} "
              f"{ours['map50'] / max(theirs['map50'], 1e-9):13.2f} {ours['cpu_s'] / theirs['cpu_s']:15.2f} "
              f"{ours['wall_s'] / theirs['wall_s']:8.2f}")


if __name__ == "__main__":
    main()
