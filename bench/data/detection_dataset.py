"""Benchmark a detection dataset build against a classification build of the same images.

A detection build does what a classification one does (decode, fit, store, through the same
pipeline) plus reading the labels, reading each image's header for its size and storing the
boxes. This prints what that costs, on photo-like 500x375 JPEGs (bench/data/ingest.py's generator) with 0-3
KITTI boxes each, all built to 256x256 with one worker per core:

- images/s and CPU seconds per image (the build process and its workers) of both builds,
- their ratios (detection / classification: the goal is a CPU ratio close to 1),
- the load average, since other work on the machine skews wall-clock figures.

Both run --rounds times, alternating, each in its own subprocess; the best round of each counts.

    python bench/data/detection_dataset.py                  # 2000 images
    python bench/data/detection_dataset.py --count 400 --rounds 2   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from ingest import generate  # noqa: E402  (a sibling script, not a package)

SIZE, TARGET = (500, 375), 256  # photo-like images built to TARGET x TARGET (ingest.py's photo set is larger)


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def write_kitti(paths: list[Path], labels: Path, images: Path, seed: int = 0) -> int:
    """0-3 KITTI boxes per image, and the images flat in ``images`` (hard links); the box count."""
    rng = np.random.default_rng(seed)
    labels.mkdir(parents=True)
    images.mkdir(parents=True)
    total = 0
    for path in paths:
        os.link(path, images / path.name)
        lines = []
        for _ in range(int(rng.integers(0, 4))):
            w, h = rng.integers(20, 200, 2)
            x, y = rng.integers(0, SIZE[0] - w), rng.integers(0, SIZE[1] - h)
            lines.append(f"car 0.00 0 0.00 {x} {y} {x + w} {y + h} 0 0 0 0 0 0 0\n")
        (labels / f"{path.stem}.txt").write_text("".join(lines))
        total += len(lines)
    return total


def run_build(fields: dict, job: Path, workers: int) -> dict:
    from trainyard.core.events import EventWriter
    from trainyard.datasets.build import build_dataset
    from trainyard.datasets.spec import DatasetSpec

    spec = DatasetSpec.model_validate({"name": "bench", "width": TARGET, "height": TARGET, **fields})
    start = time.perf_counter()
    with EventWriter(job) as events:
        info = build_dataset(spec, job, events, workers=workers)
    return {"images": sum(info["images"].values()), "seconds": time.perf_counter() - start}


def child_build(fields: dict, job: Path, workers: int) -> tuple[float, float]:
    """(images/s, CPU s per image of the build process and its workers) of a build in a subprocess."""
    shutil.rmtree(job, ignore_errors=True)
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(fields), str(job), str(workers)],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    shutil.rmtree(job, ignore_errors=True)
    return result["images"] / result["seconds"], (cpu_seconds(resource.RUSAGE_CHILDREN) - cpu) / result["images"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        fields, job, workers = args.child
        print(json.dumps(run_build(json.loads(fields), Path(job), int(workers))))
        return
    work = Path(tempfile.mkdtemp(prefix="trainyard-bench-det-"))
    try:
        classes = generate(work / "classes", args.count, args.count, SIZE, classes=2)
        paths = sorted(classes.rglob("*.jpg"))
        boxes = write_kitti(paths, work / "labels", work / "images")
        for p in paths:  # warm the page cache so neither side pays for the disk
            p.read_bytes()
        print(f"{len(paths)} {SIZE[0]}x{SIZE[1]} JPEGs, {boxes} KITTI boxes; "
              f"load average before timing: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
        classification = {"train_folder": str(classes)}
        detection = {"task": "detection", "train_folder": str(work / "images"), "train_labels": str(work / "labels")}
        runs: dict[str, list[tuple[float, float]]] = {"classification": [], "detection": []}
        for _ in range(args.rounds):
            runs["classification"].append(child_build(classification, work / "job", args.workers))
            runs["detection"].append(child_build(detection, work / "job", args.workers))
        best = {name: (max(r[0] for r in rs), min(r[1] for r in rs)) for name, rs in runs.items()}
        for name, (rate, cpu) in best.items():
            print(f"{name:>14} build ({args.workers} workers): {rate:8.1f} images/s  {cpu * 1000:.2f} ms CPU/image")
        (c_rate, c_cpu), (d_rate, d_cpu) = best["classification"], best["detection"]
        print(f"ratio detection / classification: {d_rate / c_rate:.2f} images/s, {d_cpu / c_cpu:.2f} CPU per image")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
