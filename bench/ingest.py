"""Benchmark dataset ingestion: trainyard's build_dataset against a bare Pillow loop.

Generates photo-like 500x375 JPEGs (smooth gradients plus noise, quality 90) in a few class
folders, then prints in one run:

- images/s of build_dataset (resize to 256x256, one worker per core),
- images/s of a single-process Pillow open + convert + resize loop on the same files,
  multiplied by the number of cores (the ideal a parallel pipeline could reach),
- their ratio (the goal is >= 0.8); both sides run --rounds times, alternating, and the best
  round of each counts, so other load on the machine skews the ratio less,
- for reference, the bare loop actually run in that many processes (on a busy machine it
  gets the same share of the CPUs as the build, unlike the one-core figure multiplied),
- CPU seconds per image of both (user + sys, all processes): the overhead of the pipeline
  itself, whatever else the machine is doing,
- peak memory (RSS of the build process and all its workers, sampled) of builds of
  --memory-counts images, each in its own subprocess.

    python bench/ingest.py                       # 4000 images, memory at 1000 and 10000
    python bench/ingest.py --count 500 --memory-counts 200,1000   # quick
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from PIL import Image

SIZE = (500, 375)
TARGET = 256


def make_photo(args: tuple[Path, int]) -> None:
    """One photo-like JPEG: a smooth random colour field (upsampled) plus sensor-like noise."""
    path, seed = args
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (4 + seed % 5, 6 + seed % 4, 3), dtype=np.uint8))
    smooth = np.asarray(coarse.resize(SIZE, Image.Resampling.BICUBIC), dtype=np.int16)
    noisy = np.clip(smooth + rng.normal(0, 6, smooth.shape), 0, 255).astype(np.uint8)
    Image.fromarray(noisy).save(path, "JPEG", quality=90)


def generate(root: Path, count: int, classes: int) -> list[Path]:
    paths = [root / f"class_{i % classes:02d}" / f"img_{i:06d}.jpg" for i in range(count)]
    for c in range(classes):
        (root / f"class_{c:02d}").mkdir(parents=True, exist_ok=True)
    with multiprocessing.get_context("spawn").Pool() as pool:
        pool.map(make_photo, [(p, i) for i, p in enumerate(paths)], chunksize=64)
    return paths


def link_copies(source: list[Path], root: Path, count: int) -> None:
    """A tree of ``count`` images made of hard links to ``source`` (distinct paths, no disk)."""
    for i in range(count):
        src = source[i % len(source)]
        dst = root / src.parent.name / f"{i:06d}_{src.name}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.link(src, dst)


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def bare_pillow(paths: list[Path]) -> tuple[float, float]:
    """(images/s, CPU s per image) of the plainest one-process decode + resize loop."""
    cpu, start = cpu_seconds(resource.RUSAGE_SELF), time.perf_counter()
    for path in paths:
        with Image.open(path) as img:
            np.asarray(img.convert("RGB").resize((TARGET, TARGET), Image.Resampling.BILINEAR))
    wall = time.perf_counter() - start
    return len(paths) / wall, (cpu_seconds(resource.RUSAGE_SELF) - cpu) / len(paths)


def bare_parallel(paths: list[Path], processes: int) -> float:
    """Images/s of the bare loop split across ``processes`` processes: the same ideal as
    bare x cores, but measured, so it shares the machine the way the build does."""
    parts = [paths[i::processes] for i in range(processes)]
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        pool.map(bare_pillow, parts)
    return len(paths) / (time.perf_counter() - start)


def run_build(images: Path, job: Path, workers: int | None) -> dict:
    """Build a dataset of ``images`` into ``job``; return its image count and images/s."""
    from trainyard.core.events import EventWriter
    from trainyard.datasets.build import build_dataset
    from trainyard.datasets.spec import DatasetSpec

    spec = DatasetSpec(name="bench", train_folder=str(images), width=TARGET, height=TARGET)
    start = time.perf_counter()
    with EventWriter(job) as events:
        info = build_dataset(spec, job, events, workers=workers)
    elapsed = time.perf_counter() - start
    images = sum(info["images"].values())
    return {"images": images, "rate": images / elapsed}


def tree_rss(proc: psutil.Process) -> int:
    """RSS of ``proc`` and its children; a process that exits while we look counts as 0.

    ``children()`` itself raises NoSuchProcess once the parent has exited, so it sits inside
    the try too: before, that killed the sampler thread and the peak stopped being sampled.
    """
    try:
        family = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in family:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def child_build(images: Path, job: Path, workers: int) -> tuple[int, float, float]:
    """Build in a fresh subprocess: (peak RSS of it and its workers in bytes, images/s,
    CPU s per image of it and its workers, interpreter start-up included)."""
    shutil.rmtree(job, ignore_errors=True)
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, __file__, "--child", str(images), str(job), str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    watched = psutil.Process(proc.pid)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(watched))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"child build failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    cpu_per_image = (cpu_seconds(resource.RUSAGE_CHILDREN) - cpu) / result["images"]
    shutil.rmtree(job, ignore_errors=True)
    return peak, result["rate"], cpu_per_image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=4000, help="unique images for the speed test")
    parser.add_argument("--classes", type=int, default=8)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--memory-counts", default="1000,10000",
                        help="comma-separated image counts for the peak-memory builds ('' to skip)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timed rounds of each side")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        images, job, workers = args.child
        print(json.dumps(run_build(Path(images), Path(job), int(workers))))
        return

    work = Path(tempfile.mkdtemp(prefix="trainyard-bench-"))
    try:
        t = time.perf_counter()
        paths = generate(work / "images", args.count, args.classes)
        print(f"generated {len(paths)} {SIZE[0]}x{SIZE[1]} JPEGs in {time.perf_counter() - t:.1f} s")
        for p in paths:  # warm the page cache so neither side pays for the disk
            p.read_bytes()

        print(f"load average before timing: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
        bare_runs, build_runs, parallel_runs = [], [], []
        for _ in range(args.rounds):
            bare_runs.append(bare_pillow(paths))
            build_runs.append(child_build(work / "images", work / "job", args.workers))
            parallel_runs.append(bare_parallel(paths, args.workers))
        bare, bare_cpu = max(bare_runs)
        parallel = max(parallel_runs)
        _, ours, ours_cpu = max(build_runs, key=lambda r: r[1])
        ideal = bare * args.workers
        print(f"build_dataset ({args.workers} workers): {ours:8.1f} images/s  "
              f"{ours_cpu * 1000:.2f} ms CPU/image (incl. start-up)")
        print(f"bare Pillow loop x {args.workers} cores:  {ideal:8.1f} images/s  "
              f"{bare_cpu * 1000:.2f} ms CPU/image ({bare:.1f} images/s on one core)")
        print(f"ratio: {ours / ideal:.2f} (wall clock)   CPU efficiency: {bare_cpu / ours_cpu:.2f}")
        print(f"bare loop in {args.workers} processes (measured): {parallel:8.1f} images/s; "
              f"build / that: {ours / parallel:.2f}")

        for count in [int(c) for c in args.memory_counts.split(",") if c.strip()]:
            tree = work / f"mem{count}"
            link_copies(paths, tree, count)
            peak, rate, _ = child_build(tree, work / f"memjob{count}", args.workers)
            print(f"build of {count:6d} images: peak RSS {peak / 2**20:7.1f} MiB "
                  f"(process + workers), {rate:.1f} images/s")
            shutil.rmtree(tree)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
