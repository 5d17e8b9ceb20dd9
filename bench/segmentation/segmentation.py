"""Benchmark trainyard's default segmenter against a hand-written segmentation-models-pytorch loop.

The same generated set (bench/segmentation/segmentation_data.py: squares, discs and triangles of random colours
on cluttered noise, overlapping; train, val and test splits), the same network (U-Net, ResNet-18
encoder, from scratch), the same epochs, image size, batch, optimizer, LR schedule, loss and flips:

  trainyard   its real CLI, as a user runs it: ``trainyard dataset create --task segmentation``,
              then ``trainyard train --dataset ID --epochs N`` with no --network (the recommended
              default and its recipe), then ``trainyard segment ID TEST_IMAGES --output DIR``
              (the best snapshot by val mIoU)
  reference   bench/segmentation/segmentation_reference.py: smp.Unet, cross-entropy + smp's Dice loss, the
              optimizer and schedule trainyard's job resolved (read from its spec.json), a
              validation each epoch, the best weights segmenting the test images

Both sides run one thread (OMP_NUM_THREADS=1; the reference calls torch.set_num_threads(1)), each
in its own processes, one after the other. Test mIoU is computed the same way for both, by
torchmetrics' macro MulticlassJaccardIndex over the index PNGs each side wrote. CPU-seconds are
the training commands' children's (resource.getrusage), beside their wall time; the ratios are
trainyard / reference. ``--hand-recipe adam`` trains the reference with Adam 1e-3 (fixed) instead,
the issue's scale point, to judge trainyard's recipe itself.

    taskset -c 1 python bench/segmentation/segmentation.py [--train 160] [--val 40] [--test 40] [--size 64]
        [--epochs 15] [--seed 1] [--hand-recipe same|adam]

The defaults take about 2 x 130 CPU-seconds (5 minutes on one free core); the figures of
docs/segmentation.md are theirs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench.segmentation.segmentation_data import CLASSES, read_split, write_split  # noqa: E402  (after ROOT is on the path)

TRAINYARD = Path(sys.executable).with_name("trainyard")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], env: dict[str, str], what: str) -> tuple[str, float, float]:
    """(stdout, CPU-seconds of the command and its children, wall seconds)."""
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done.stdout, cpu, wall


def test_miou(found: Path, truth: Path) -> float:
    """Macro mean IoU over every class of the index PNGs in ``found`` against ``truth`` (by name)."""
    import torch
    from torchmetrics.classification import MulticlassJaccardIndex

    metric = MulticlassJaccardIndex(len(CLASSES), average="macro")
    for path in sorted(truth.glob("*.png")):
        metric.update(torch.from_numpy(read_mask(found / path.name)).long()[None],
                      torch.from_numpy(read_mask(path)).long()[None])
    return float(metric.compute())


def read_mask(path: Path) -> np.ndarray:
    from PIL import Image

    return np.array(Image.open(path))  # a copy: torch wants a writable array


def load_spec_batch(spec: dict) -> int:
    """The batch the job trained with: its own, else its network's default (trainyard's rule)."""
    from trainyard.training.spec import ModelSpec

    return ModelSpec.model_validate(spec).default_batch_size()


def trainyard_side(data: Path, work: Path, env: dict[str, str], args) -> dict:
    """Dataset, training and test masks through trainyard's CLI; the training's CPU and wall seconds."""
    folders = [f"--{flag}-{part}={data / split / kind}" for split, flag in (("train", "train"), ("val", "val"),
                                                                           ("test", "test"))
               for part, kind in (("folder", "images"), ("labels", "masks"))]
    out, _, _ = run([str(TRAINYARD), "dataset", "create", "--name", "shapes", "--task", "segmentation", *folders,
                     "--classes", ",".join(CLASSES), "--size", f"{args.size}x{args.size}", "--json"], env, "dataset")
    dataset = json.loads(out)["id"]
    out, cpu, wall = run([str(TRAINYARD), "train", "--dataset", dataset, "--epochs", str(args.epochs),
                          "--seed", str(args.seed), "--json"], env, "trainyard train")
    job = json.loads(out)["jobs"][0]
    run([str(TRAINYARD), "segment", job["id"], str(data / "test" / "images"), "--output", str(work / "masks"),
         "--json"], env, "trainyard segment")
    spec = json.loads(next(Path(env["TRAINYARD_HOME"]).rglob(f"{job['id']}/spec.json")).read_text())
    spec["batch_size"] = load_spec_batch(spec)
    return {"cpu_s": cpu, "wall_s": wall, "spec": spec, "miou": test_miou(work / "masks", data / "test" / "masks"),
            "best": job.get("best")}


def reference_side(data: Path, work: Path, env: dict[str, str], spec: dict, args) -> dict:
    """The hand loop with trainyard's resolved recipe (or Adam 1e-3 with ``--hand-recipe adam``)."""
    lr = spec["lr"]
    if args.hand_recipe == "adam":
        recipe = ["--solver", "adam", "--lr", "0.001", "--momentum", "0.9", "--weight-decay", "0", "--policy", "fixed"]
    else:
        recipe = ["--solver", spec["solver"], "--lr", str(lr["base_lr"]), "--momentum", str(spec["momentum"]),
                  "--weight-decay", str(spec["weight_decay"]), "--policy", lr["policy"],
                  "--step-percent", str(lr.get("step_percent", 33.0)), "--gamma", str(lr.get("gamma", 0.1))]
    flip = (spec.get("augment") or {}).get("flip", "none")
    _, cpu, wall = run([sys.executable, str(Path(__file__).with_name("segmentation_reference.py")), str(data),
                        str(work), "--epochs", str(args.epochs), "--batch", str(spec["batch_size"]),
                        "--seed", str(args.seed), "--flip", "lr" if flip == "lr" else "none", *recipe],
                       env, "reference loop")
    history = json.loads((work / "reference.json").read_text())["val_miou"]
    return {"cpu_s": cpu, "wall_s": wall, "miou": test_miou(work / "masks", data / "test" / "masks"),
            "val_miou": history, "recipe": " ".join(recipe)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=160)
    parser.add_argument("--val", type=int, default=40)
    parser.add_argument("--test", type=int, default=40)
    parser.add_argument("--size", type=int, default=64, help="image side, a multiple of 32 (U-Net)")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hand-recipe", default="same", choices=("same", "adam"),
                        help="same: trainyard's resolved recipe; adam: Adam 1e-3 fixed (the issue's scale point)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-segmentation-") as tmp:
        base = Path(tmp)
        for split, n, seed in (("train", args.train, 0), ("val", args.val, 1), ("test", args.test, 2)):
            write_split(base / "data" / split, n, args.size, seed)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
               "TRAINYARD_HOME": str(base / "home"), "TRAINYARD_DATA_ROOTS": str(base), "TRAINYARD_AUTH_TOKEN": ""}
        (base / "trainyard").mkdir()
        (base / "reference").mkdir()
        mine = trainyard_side(base / "data", base / "trainyard", env, args)
        theirs = reference_side(base / "data", base / "reference", env, mine["spec"], args)
        shares = np.bincount(read_split(base / "data" / "test" / "images", base / "data" / "test" / "masks")[1]
                             .reshape(-1), minlength=len(CLASSES)) / (args.test * args.size ** 2)
    report(mine, theirs, args, shares)


def report(mine: dict, theirs: dict, args, shares: np.ndarray) -> None:
    spec = mine["spec"]
    print(f"set: {args.train} train / {args.val} val / {args.test} test images, {args.size}x{args.size}, "
          f"classes {', '.join(CLASSES)} (test pixel shares "
          f"{', '.join(f'{s:.2f}' for s in shares)}); {args.epochs} epochs, seed {args.seed}, one thread")
    print(f"trainyard recipe: {spec.get('network')}, batch {spec['batch_size']}, {spec['solver']}, "
          f"lr {json.dumps(spec['lr'])}, momentum {spec['momentum']}, weight decay {spec['weight_decay']}, "
          f"augment {json.dumps(spec.get('augment'))}")
    print(f"reference recipe: {theirs['recipe']}")
    print(f"reference val mIoU per epoch: {' '.join(f'{v:.3f}' for v in theirs['val_miou'])}")
    print(f"{'':10} {'test mIoU':>10} {'CPU-s':>8} {'wall s':>8}")
    for side, doc in (("trainyard", mine), ("reference", theirs)):
        print(f"{side:10} {doc['miou']:10.3f} {doc['cpu_s']:8.1f} {doc['wall_s']:8.1f}")
    print(f"{'ratio':10} {mine['miou'] / max(theirs['miou'], 1e-9):9.2f}x {mine['cpu_s'] / theirs['cpu_s']:7.2f}x "
          f"{mine['wall_s'] / theirs['wall_s']:7.2f}x   (trainyard / reference)")


if __name__ == "__main__":
    main()
