"""Benchmark dataset ingestion at scale: trainyard's build against a plain Pillow + Pool script.

Generates a set of small JPEGs (unique ones, hard-linked up to --count: distinct paths, no disk)
and a set of photo-sized 2000x1500 JPEGs, then, each side started the same way (a fresh
``python bench/data/ingest.py --child ...`` process in a session of its own, so the kernel's
per-session CPU groups treat both alike, waited for), prints per row:

- CPU seconds (user + sys of the process and all its workers) per image, split into the
  parent's own and its workers', wall seconds, and peak RSS of the process tree (sampled every
  20 ms),
- for the small set at --small-counts (5k and 50k by default): how both grow with N,
- for the photos: trainyard with its reduced JPEG decode (Image.draft), trainyard as it was
  before (full decode, same code otherwise) and the plain script (full decode, as a plain
  script does): the "today" vs "now" ratio is the reduced decode's gain,
- the feed: trainyard's BatchLoader over the built split (train order, no crop) against a plain
  memmap loop (gather a shuffled batch, to float, subtract the mean), in images/s, and the
  same with a random crop and a flip (trainyard) against the plain loop with a crop per batch;
  both in this process, with the same torch threads (printed, with OMP_WAIT_POLICY: on a loaded
  2-core machine OpenMP's spin-waiting threads make both sides several times slower, and the
  ratio swings with whichever side they hit).

    python bench/data/ingest.py                 # 5k and 50k small images, 300 photos
    python bench/data/ingest.py --quick         # 2k and 10k small, 40 photos
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from PIL import Image

SMALL, PHOTO, TARGET = (64, 48), (2000, 1500), 32
PHOTO_TARGET = 256


def make_jpeg(args: tuple[Path, int, tuple[int, int]]) -> None:
    """One photo-like JPEG: a smooth random colour field (upsampled) plus sensor-like noise."""
    path, seed, size = args
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (4 + seed % 5, 6 + seed % 4, 3), dtype=np.uint8))
    smooth = np.asarray(coarse.resize(size, Image.Resampling.BICUBIC), dtype=np.int16)
    noisy = np.clip(smooth + rng.integers(-8, 9, smooth.shape), 0, 255).astype(np.uint8)
    Image.fromarray(noisy).save(path, "JPEG", quality=90)


def generate(root: Path, unique: int, count: int, size: tuple[int, int], classes: int = 10) -> Path:
    """``count`` images in ``classes`` folders: ``unique`` generated, the rest hard links to them."""
    made = [root / "unique" / f"u{i:06d}.jpg" for i in range(unique)]
    made[0].parent.mkdir(parents=True, exist_ok=True)
    with multiprocessing.get_context("fork").Pool() as pool:
        pool.map(make_jpeg, [(p, i, size) for i, p in enumerate(made)], chunksize=16)
    tree = root / "tree"
    for i in range(count):
        dst = tree / f"class_{i % classes:02d}" / f"{i:06d}.jpg"
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.link(made[i % unique], dst)
    for p in made:
        p.read_bytes()  # warm the page cache: neither side pays for the disk
    return tree


# -- the two sides, each run in its own process --------------------------------------------------
def child_trainyard(images: str, job: str, size: int, reduce: bool) -> dict:
    from trainyard.core.events import EventWriter
    from trainyard.datasets import decode_worker as worker
    from trainyard.datasets.build import build_dataset
    from trainyard.datasets.spec import DatasetSpec

    if not reduce:  # the build as it was before the reduced decode: everything else the same
        full = worker.load_resized
        worker.load_resized = lambda *a, **k: full(*a, **k, reduce=False)  # type: ignore[misc]
    spec = DatasetSpec(name="bench", train_folder=images, width=size, height=size, val_percent=0)
    with EventWriter(Path(job)) as events:
        info = build_dataset(spec, Path(job), events)
    return {"images": sum(info["images"].values())}


def _plain_one(args: tuple[str, int]) -> np.ndarray:
    path, size = args
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB").resize((size, size), Image.Resampling.BILINEAR))


def child_plain(images: str, out: str, size: int) -> dict:
    """The plain script: list the files, Pool.imap the decode + resize, write a memmap."""
    paths = sorted(str(p) for p in Path(images).rglob("*.jpg"))
    Path(out).mkdir(parents=True, exist_ok=True)
    mm = np.lib.format.open_memmap(Path(out) / "images.npy", "w+", np.uint8, (len(paths), size, size, 3))
    with multiprocessing.Pool(os.cpu_count()) as pool:
        for i, pixels in enumerate(pool.imap(_plain_one, [(p, size) for p in paths], chunksize=32)):
            mm[i] = pixels
    mm.flush()
    return {"images": len(paths)}


# -- measuring --------------------------------------------------------------------------------
def tree_rss(proc: psutil.Process) -> int:
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


def measure(args: list[str]) -> dict:
    """Run ``bench/data/ingest.py --child ARGS``: CPU s, wall s, peak tree RSS, its JSON answer."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", *args], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    watched, peak, done = psutil.Process(proc.pid), 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(watched))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"child {args[0]} failed ({proc.returncode})")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    answer = json.loads(out.strip().splitlines()[-1])
    return {**answer, "cpu": cpu, "wall": wall, "rss": peak}


def row(name: str, r: dict) -> str:
    return (f"  {name:<28} {r['images']:7d} img  {r['cpu']:8.1f} CPU-s (parent {r['parent']:.1f}, workers "
            f"{r['workers']:.1f})  {1000 * r['cpu'] / r['images']:7.3f} ms CPU/img  {r['wall']:7.1f} s wall  "
            f"{r['rss'] / 2**20:7.0f} MiB peak")


def sides(images: Path, work: Path, size: int, variants: list[str], rounds: int) -> dict[str, dict]:
    """Each variant ``rounds`` times, interleaved (a, b, b, a, ...) so a change of load falls on
    both sides; per variant the median CPU (and its split) and wall, the largest peak RSS."""
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for k in range(rounds):
        for variant in variants[::-1] if k % 2 else variants:
            shutil.rmtree(work / "out", ignore_errors=True)
            if variant == "plain":
                runs[variant].append(measure(["plain", str(images), str(work / "out"), str(size)]))
            else:
                runs[variant].append(measure(["trainyard", str(images), str(work / "out"), str(size),
                                              "1" if variant == "trainyard" else "0"]))
    return {v: {"images": r[0]["images"], "rss": max(x["rss"] for x in r),
                **{k: statistics.median(x[k] for x in r) for k in ("cpu", "parent", "workers", "wall")}}
            for v, r in runs.items()}


# -- the feed ---------------------------------------------------------------------------------
def feed(dataset: Path, batch: int, seconds: float, rounds: int = 3) -> list[str]:
    import torch

    from trainyard.artifact.normalize import center_crop_batch, mean_tensor
    from trainyard.datasets.storage import open_split
    from trainyard.training.augment import AugmentSettings
    from trainyard.training.data import BatchLoader

    reader = open_split(dataset, "train")
    mean_hwc = np.load(dataset / "mean.npy")
    mean = torch.from_numpy(mean_hwc).permute(2, 0, 1)[None] / 255  # the plain loop's: a permuted view's layout
    mm = np.memmap(dataset / "train" / "images.u8", np.uint8, "r", shape=(len(reader), *reader.shape))
    n = len(reader)

    def ours(crop, flip) -> float:
        aug = AugmentSettings(flip="lr") if flip else None
        # as training gets it from mean_tensor: contiguous NCHW, centre-cropped (the plain loop's
        # permuted layout would cost our in-place subtraction a strided pass training never pays)
        m = mean_tensor(mean_hwc, "image", crop)
        loader = BatchLoader(reader, batch, train=True, mean=m, crop=crop, augment=aug, seed=0)
        return rate(lambda epoch: (x for x, _ in loader.batches(epoch)))


    def plain(crop) -> float:
        def epoch_batches(epoch):
            order = np.random.default_rng(epoch).permutation(n)
            for i in range(n // batch):
                idx = np.sort(order[i * batch:(i + 1) * batch])
                x = torch.from_numpy(mm[idx]).permute(0, 3, 1, 2)
                m = mean
                if crop:  # what a plain script does: a slice per sample, flip the chosen half
                    tops, lefts = np.random.randint(0, x.shape[2] - crop + 1, (2, len(idx)))
                    x = torch.stack([x[j, :, t:t + crop, u:u + crop] for j, (t, u) in enumerate(zip(tops, lefts))])
                    flip = torch.from_numpy(np.random.rand(len(idx)) < 0.5)
                    x[flip] = x[flip].flip(-1)
                    m = center_crop_batch(mean, crop)
                yield (x.float() / 255 - m).contiguous()
        return rate(epoch_batches)

    def rate(make) -> tuple[float, float]:
        """(images per wall second, images per CPU second of this process, all its threads)."""
        images, start, cpu, epoch = 0, time.perf_counter(), time.process_time(), 0
        while time.perf_counter() - start < seconds:
            for x in make(epoch):
                images += x.shape[0]
            epoch += 1
        return images / (time.perf_counter() - start), images / (time.process_time() - cpu)

    crop = reader.shape[0] - 4
    lines = []
    for label, a, b in (("no crop", lambda: ours(None, False), lambda: plain(None)),
                        (f"crop {crop} + flip", lambda: ours(crop, True), lambda: plain(crop))):
        # interleaved a, b, b, a, ...: a change of load falls on both sides alike
        runs = [(a(), b()) if k % 2 == 0 else tuple(reversed((b(), a()))) for k in range(rounds)]
        wall = statistics.median(o[0] / p[0] for o, p in runs)
        per_cpu = statistics.median(o[1] / p[1] for o, p in runs)
        best_ours, best_plain = max(o[0] for o, _ in runs), max(p[0] for _, p in runs)
        lines.append(f"  feed {label:<16} trainyard {best_ours:9.0f} img/s   plain memmap loop {best_plain:9.0f} "
                     f"img/s   ratio {wall:.2f} per wall s, {per_cpu:.2f} per CPU s (medians of {rounds})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small-counts", default="5000,50000")
    parser.add_argument("--photos", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="2k and 10k small images, 40 photos")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs of each side (medians)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        answer = (child_plain(rest[0], rest[1], int(rest[2])) if kind == "plain"
                  else child_trainyard(rest[0], rest[1], int(rest[2]), rest[3] == "1"))
        own, workers = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        print(json.dumps({**answer, "parent": own.ru_utime + own.ru_stime,
                          "workers": workers.ru_utime + workers.ru_stime}))
        return
    counts = [2000, 10000] if args.quick else [int(c) for c in args.small_counts.split(",")]
    photos = 40 if args.quick else args.photos
    work = Path(tempfile.mkdtemp(prefix="trainyard-ingest-"))
    try:
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()}")
        t = time.perf_counter()
        small = {c: generate(work / f"small{c}", min(c, 5000), c, SMALL) for c in counts}
        photo_tree = generate(work / "photos", max(1, photos // 5), photos, PHOTO)
        print(f"generated in {time.perf_counter() - t:.0f} s")
        print(f"small {SMALL[0]}x{SMALL[1]} JPEGs -> {TARGET}x{TARGET}, encoding none, load {os.getloadavg()[0]:.1f}:")
        per = {}
        for c in counts:
            per[c] = sides(small[c], work, TARGET, ["trainyard", "plain"], args.rounds)
            for name, r in per[c].items():
                print(row(f"{name} {c}", r))
        lo, hi = counts[0], counts[-1]
        for name in ("trainyard", "plain"):
            a, b = per[lo][name], per[hi][name]
            print(f"  growth {lo}->{hi} {name:<9}: CPU/img x{(b['cpu'] / b['images']) / (a['cpu'] / a['images']):.2f}, "
                  f"peak RSS x{b['rss'] / a['rss']:.2f}")
        print(f"  trainyard / plain CPU at {hi}: {per[hi]['trainyard']['cpu'] / per[hi]['plain']['cpu']:.2f}")
        print(f"photo-sized {PHOTO[0]}x{PHOTO[1]} JPEGs -> {PHOTO_TARGET}x{PHOTO_TARGET} squash, "
              f"load {os.getloadavg()[0]:.1f}:")
        ph = sides(photo_tree, work, PHOTO_TARGET, ["trainyard", "trainyard-full-decode", "plain"], args.rounds)
        for name, r in ph.items():
            print(row(name, r))
        today, now, plain = (ph[k]["cpu"] for k in ("trainyard-full-decode", "trainyard", "plain"))
        print(f"  today (full decode) / now, CPU per image: {today / now:.2f}; trainyard / plain: {now / plain:.2f}")
        job = work / "feedjob"
        measure(["trainyard", str(small[hi]), str(job), str(TARGET), "1"])
        import torch

        print(f"feed over the {hi}-image split, batch 256, CPU, {torch.get_num_threads()} torch threads, "
              f"OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY', 'unset')}, load {os.getloadavg()[0]:.1f}:")
        for line in feed(job / "dataset", 256, 1.5 if args.quick else 3.0, max(5, args.rounds)):
            print(line)
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
