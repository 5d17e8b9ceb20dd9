"""Early stopping across a sweep against the plain grid: epochs trained, time, and the best run.

Generates a small dataset (coloured squares under heavy noise, so accuracy climbs over several
epochs and the learning rate matters), then trains the same LeNet sweep of learning rates twice
through the CLI, one run after another as ``trainyard train`` does: once as a plain grid, once
with ``--early-stop`` (successive halving, jobs/runs/early_stop.py). Prints the epochs each trained,
the epochs saved, wall time and CPU-seconds of the training processes, and whether the best run
(highest validation accuracy) is the same learning rate in both.

    python bench/training/sweep.py                       # 8 rates 1e-6..1e-1, 6 epochs: ~20 min on 2 busy cores
    python bench/training/sweep.py --epochs 10 --order ascending

Measured on 2 shared cores (load average 12-18), the defaults: the grid trained 43 epochs (lr 0.1
diverged after 1 and failed in both), early stopping 27 (5 runs stopped at epochs 2 and 4),
16 saved; wall 406 s against 942 s, CPU 102 s against 157 s. Two rates tied for the best
accuracy (100 %) in the grid, 0.00373 and 0.0193; early stopping kept 0.0193 to the end (100 %)
and stopped 0.00373 at epoch 4 (81 % then; it reached 100 % at epoch 5 in the grid): halving
at every rung can stop a slow starter, the price of the epochs saved.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image


def make_images(root: Path, classes: int, per_class: int, seed: int = 0) -> None:
    """Class i: a flat colour plus noise strong enough that one epoch does not separate them."""
    rng = np.random.default_rng(seed)
    palette = rng.uniform(60, 200, (classes, 3))
    for c in range(classes):
        folder = root / f"class{c}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels = palette[c] + rng.normal(0, 70, (28, 28, 3))
            Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(folder / f"{i}.png")


def cli(env: dict, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args, "--json"], env=env,
                            capture_output=True, text=True)
    if result.returncode not in (0, 1):
        raise SystemExit(f"trainyard {' '.join(args)} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sweep(env: dict, dataset: str, lrs: list[float], epochs: int, early_stop: bool, name: str) -> dict:
    wall, cpu = time.perf_counter(), children_cpu()
    args = ["train", "--dataset", dataset, "--network", "lenet", "--name", name, "--epochs", str(epochs),
            "--lr-policy", "fixed", "--batch-size", "16", "--seed", "1", "--lr", ",".join(f"{lr:g}" for lr in lrs)]
    jobs = cli(env, *args, *(["--early-stop"] if early_stop else []))["jobs"]
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    runs = [{"lr": j["spec"]["lr"]["base_lr"], "epoch": j["epoch"], "status": j["status"],
             "best": (j["best"] or {}).get("val_accuracy"), "detail": j["status_detail"]} for j in jobs]
    best = max(runs, key=lambda r: r["best"] if r["best"] is not None else -1)
    return {"runs": runs, "epochs": sum(r["epoch"] for r in runs), "wall": wall, "cpu": cpu, "best": best,
            "stopped": sum(1 for r in runs if r["detail"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--per-class", type=int, default=50)
    parser.add_argument("--order", choices=["shuffled", "ascending", "descending"], default="shuffled",
                        help="the order the runs train in (one after another): early stopping judges "
                             "each run against those that got to a point first")
    options = parser.parse_args()
    lrs = [float(f"{x:.3g}") for x in np.logspace(-6, -1, options.rates)]
    if options.order == "shuffled":
        random.Random(0).shuffle(lrs)
    elif options.order == "descending":
        lrs.reverse()
    with tempfile.TemporaryDirectory(prefix="trainyard-sweep-") as tmp:
        root = Path(tmp)
        make_images(root / "data" / "images", options.classes, options.per_class)
        src = str(Path(__file__).resolve().parents[2] / "src")
        env = {**os.environ, "TRAINYARD_HOME": str(root / "home"), "TRAINYARD_DATA_ROOTS": str(root / "data"),
               "TRAINYARD_AUTH_TOKEN": "", "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
        dataset = cli(env, "dataset", "create", "--name", "noisy", "--train-folder", str(root / "data" / "images"),
                      "--size", "28x28")["id"]
        print(f"{options.rates} learning rates {lrs}, {options.epochs} epochs each, LeNet on "
              f"{options.classes}x{options.per_class} noisy 28x28 images; load average {os.getloadavg()[0]:.1f}")
        grid = sweep(env, dataset, lrs, options.epochs, False, "grid")
        stopped = sweep(env, dataset, lrs, options.epochs, True, "early")
    for title, result in (("grid", grid), ("--early-stop", stopped)):
        print(f"\n{title}: {result['epochs']:g} epochs trained, {result['stopped']} runs stopped, "
              f"wall {result['wall']:.0f} s, CPU {result['cpu']:.0f} s")
        for run in result["runs"]:
            best = f"{run['best']:.1f} %" if run["best"] is not None else "-"
            print(f"  lr {run['lr']:<8g} epoch {run['epoch']:<4g} best {best:>7}  {run['detail'] or ''}")
    print(f"\nepochs saved: {grid['epochs'] - stopped['epochs']:g} of {grid['epochs']:g} "
          f"({stopped['epochs'] / grid['epochs']:.2f}x the epochs); wall {stopped['wall'] / grid['wall']:.2f}x, "
          f"CPU {stopped['cpu'] / max(grid['cpu'], 1e-9):.2f}x")
    a, b = grid["best"], stopped["best"]
    # Runs that tie for the grid's best accuracy are all "the best run".
    top = [r["lr"] for r in grid["runs"] if r["best"] == a["best"]]
    verdict = "the same" if b["lr"] in top else "DIFFERENT"
    print(f"best run: lr {', '.join(f'{lr:g}' for lr in top)} ({a['best']:.1f} %) in the grid, lr {b['lr']:g} "
          f"({b['best']:.1f} %) with early stopping: {verdict}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
