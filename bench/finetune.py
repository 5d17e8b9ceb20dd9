"""Fine-tuning from the weights store against training from scratch.

1. Pretrain a network on one generated task (six kinds of shape) and put its weights in the store
   with `trainyard weights import` -- or, on a machine with internet, pull the network's real
   ImageNet weights (`trainyard weights pull resnet18.imagenet`) and use those instead.
2. Fine-tune on a second task (six other shapes) with only 20 training images per class, from
   those weights, and train the same network from scratch for the same epochs.
3. Print both best validation accuracies and the ratio of wall time each run needed to reach the
   scratch run's best accuracy (fine-tune / scratch; below 1 means fine-tuning got there sooner).

Every step runs through the `trainyard` CLI in a temporary TRAINYARD_HOME, as a user would.

    python bench/finetune.py [--network resnet18] [--size 32] [--epochs 12] [--pretrain-epochs 8]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

TASK_A = ["circle", "square", "triangle", "cross", "ring", "bar"]
TASK_B = ["diamond", "ellipse", "hexagon", "frame", "star", "plus_ring"]


def polygon(cx, cy, r, sides, turn=0.0):
    return [(cx + r * math.cos(turn + 2 * math.pi * i / sides), cy + r * math.sin(turn + 2 * math.pi * i / sides))
            for i in range(sides)]


def draw_shape(draw: ImageDraw.ImageDraw, kind: str, cx: float, cy: float, r: float, colour) -> None:
    """One shape of ``kind`` centred at (cx, cy) with radius r."""
    w = max(2, int(r / 3))
    shapes = {
        "circle": lambda: draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour),
        "square": lambda: draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=colour),
        "triangle": lambda: draw.polygon(polygon(cx, cy, r, 3, -math.pi / 2), fill=colour),
        "cross": lambda: (draw.line([cx - r, cy - r, cx + r, cy + r], colour, w),
                          draw.line([cx - r, cy + r, cx + r, cy - r], colour, w)),
        "ring": lambda: draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=colour, width=w),
        "bar": lambda: draw.rectangle([cx - r, cy - r / 3, cx + r, cy + r / 3], fill=colour),
        "diamond": lambda: draw.polygon(polygon(cx, cy, r, 4), fill=colour),
        "ellipse": lambda: draw.ellipse([cx - r, cy - r / 2, cx + r, cy + r / 2], fill=colour),
        "hexagon": lambda: draw.polygon(polygon(cx, cy, r, 6), fill=colour),
        "frame": lambda: draw.rectangle([cx - r, cy - r, cx + r, cy + r], outline=colour, width=w),
        "star": lambda: draw.polygon([p for i in range(5) for p in (
            polygon(cx, cy, r, 5, -math.pi / 2)[i], polygon(cx, cy, r / 2.5, 5, -math.pi / 2 + math.pi / 5)[i])],
            fill=colour),
        "plus_ring": lambda: (draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=colour, width=w),
                              draw.line([cx - r, cy, cx + r, cy], colour, w)),
    }
    shapes[kind]()


def make_task(root: Path, kinds: list[str], per_class: int, size: int, seed: int) -> Path:
    """Class folders of shapes in random colours, places and sizes over noisy backgrounds."""
    rng = np.random.default_rng(seed)
    for kind in kinds:
        (root / kind).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            background = rng.integers(0, 90, (size, size, 3), dtype=np.uint8)
            image = Image.fromarray(background)
            r = rng.uniform(size * 0.2, size * 0.4)
            cx, cy = rng.uniform(r, size - r, 2)
            draw_shape(ImageDraw.Draw(image), kind, cx, cy, r, tuple(int(c) for c in rng.integers(120, 256, 3)))
            image.save(root / kind / f"{i}.png")
    return root


class Cli:
    """The trainyard CLI in one home."""

    def __init__(self, home: Path, data: Path):
        self.env = {**os.environ, "TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(data)}

    def __call__(self, *args: str, check: bool = True) -> dict:
        done = subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args, "--json"], env=self.env,
                              capture_output=True, text=True)
        if check and done.returncode != 0:
            raise SystemExit(f"trainyard {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr.strip()}


def dataset(cli: Cli, name: str, folder: Path, size: int, val_percent: int) -> str:
    doc = cli("dataset", "create", "--name", name, "--train-folder", str(folder), "--size", f"{size}x{size}",
              "--val-percent", str(val_percent), "--min-per-class", "1")
    return doc["id"] if "id" in doc else doc["jobs"][0]["id"]


def train(cli: Cli, dataset_id: str, network: str, epochs: int, *extra: str) -> dict:
    doc = cli("train", "--dataset", dataset_id, "--network", network, "--epochs", str(epochs),
              "--batch-size", "16", "--solver", "adam", "--lr", "0.001", "--lr-policy", "cosine",
              "--seed", "0", "--mean", "pixel", *extra)
    return doc["jobs"][0]


def epoch_times(home: Path, job_id: str) -> dict[float, float]:
    """Seconds from the job's start to each validation (its val_accuracy metric events)."""
    events = [json.loads(line) for line in (home / "jobs" / job_id / "events.jsonl").read_text().splitlines()]
    start = events[0]["time"]
    return {e["epoch"]: e["time"] - start for e in events
            if e.get("type") == "metric" and e.get("name") == "val_accuracy"}


def time_to_reach(home: Path, job: dict, target: float) -> float | None:
    times = epoch_times(home, job["id"])
    for epoch, accuracy in job["metrics"]["val_accuracy"]:
        if accuracy >= target - 1e-9:
            return times.get(epoch)
    return None


def pretrained_weights(cli: Cli, args, data: Path) -> tuple[str, str]:
    """(store entry, what it is): real ImageNet weights when they can be pulled, else pretraining."""
    if not args.offline:
        pulled = cli("weights", "pull", f"{args.network}.imagenet", check=False)
        if "error" not in pulled:
            return pulled["name"], f"ImageNet weights {pulled['name']} (pulled)"
    folder = make_task(data / "task-a", TASK_A, args.pretrain_per_class, args.size, seed=1)
    dataset_a = dataset(cli, "task-a", folder, args.size, 20)
    job = train(cli, dataset_a, args.network, args.pretrain_epochs)
    checkpoint = sorted((Path(cli.env["TRAINYARD_HOME"]) / "jobs" / job["id"] / "checkpoints").glob("*.pt"))[-1]
    cli("weights", "import", "bench-task-a", str(checkpoint), "--network", args.network)
    best = job["best"]["val_accuracy"]
    return "bench-task-a", f"weights pretrained here on task A (best {best:.1f}%), imported as bench-task-a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", default="resnet18")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--pretrain-epochs", type=int, default=8)
    parser.add_argument("--pretrain-per-class", type=int, default=150)
    parser.add_argument("--per-class", type=int, default=20, help="training images per class of task B")
    parser.add_argument("--offline", action="store_true", help="never try to pull ImageNet weights")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, data = Path(tmp) / "home", Path(tmp) / "data"
        cli = Cli(home, data)
        entry, used = pretrained_weights(cli, args, data)
        # 20 per class to train on; as many again to validate (val_percent 50 of 40).
        folder = make_task(data / "task-b", TASK_B, 2 * args.per_class, args.size, seed=2)
        dataset_b = dataset(cli, "task-b", folder, args.size, 50)
        scratch = train(cli, dataset_b, args.network, args.epochs)
        tuned = train(cli, dataset_b, args.network, args.epochs, "--pretrained", entry)
        target = scratch["best"]["val_accuracy"]
        t_scratch, t_tuned = time_to_reach(home, scratch, target), time_to_reach(home, tuned, target)
        print(f"network {args.network}, {args.size}x{args.size}, {args.per_class} training images per class, "
              f"{args.epochs} epochs; starting weights: {used}")
        print(f"scratch:    best validation accuracy {target:.1f}% (reached after {t_scratch:.1f} s)")
        print(f"fine-tuned: best validation accuracy {tuned['best']['val_accuracy']:.1f}%"
              + (f" (reached {target:.1f}% after {t_tuned:.1f} s)" if t_tuned is not None else ""))
        if t_tuned is not None:
            print(f"time to reach the scratch run's best: fine-tuned / scratch = {t_tuned / t_scratch:.2f}")
        else:
            print("the fine-tuned run never reached the scratch run's best accuracy")


if __name__ == "__main__":
    main()
