"""Multi-GPU scaling (MISSION M9, M11): images/second on 1, 2, 4 ... GPUs, speed-up and efficiency.

DIGITS 2's headline figure was GoogLeNet at batch 128 on 1, 2 and 4 GPUs. This trains GoogLeNet
(batch 128 per GPU, 224x224 crops of 256x256 images, as DIGITS did) and ResNet-50 for a fixed
number of steps on 1, 2, 4 ... up to every GPU present. Each measurement is a real trainyard
model job, started with the model kind's own command (one process, or torch.distributed.run
with one process per GPU, NCCL, DDP) over a generated dataset in trainyard's storage format, so
data loading, on-device augmentation, AMP and channels_last are all in the figure.

images/second comes from the job's events: the global images trained between the first loss
read-back after ``--warmup`` steps and the last one, over the wall time between them. Speed-up
is images/second at N GPUs over 1 GPU; efficiency is speed-up / N (the aim: 0.9 or better).
Every row also says what the job ran with, from its own log: precision (``--precision``),
channels_last and torch.compile, and its peak GPU memory (torch's allocator, rank 0).
With one GPU the script also runs "1 (DDP)": torch.distributed.run with one process, so the
DDP code path and its overhead are measured even where only one GPU is present.

Without GPUs it checks correctness instead: 1 CPU process with batch 2B and 2 gloo processes with
batch B must reach the same losses; their images/second is printed for information only.

    python bench/cluster/scaling.py                      # every GPU, googlenet and resnet50
    python bench/cluster/scaling.py --networks googlenet --steps 40 --counts 1,2,4 --json out.json
    python bench/cluster/scaling.py --networks googlenet --precision fp32    # AMP off
    python bench/cluster/scaling.py --cluster ray        # the same job locally and through Ray (scaling_cluster.py)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trainyard.core.events import read_events
from trainyard.core.paths import JobFolder
from trainyard.core.vocabulary import LEASED_GPUS
from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import save_mean
from trainyard.jobs.kinds.registry import distributed_command, get_kind
from trainyard.training.spec import ModelSpec

CLASSES = [f"c{i}" for i in range(10)]


def write_dataset(folder: Path, images: int, size: int, channels: int, seed: int = 0) -> Path:
    """A learnable dataset of ``images`` (size x size) images, 10 classes, encoding none."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASSES), images)
    cell = size // 4
    for split, count in (("train", images), ("val", min(images, 256))):
        writer = SplitWriter(folder / split, size, size, channels, "none", mean=split == "train")
        for start in range(0, count, 256):  # in chunks: 4096 ImageNet-sized images are 800 MB
            part = labels[start:start + 256]
            chunk = rng.integers(0, 60, (len(part), size, size, channels), dtype=np.uint8)
            for image, label in zip(chunk, part):
                y, x = divmod(int(label), 4)
                image[y * cell:(y + 1) * cell, x * cell:(x + 1) * cell] += 150  # where the class is
                writer.append(image, int(label))
        writer.close()
        if split == "train":
            save_mean(folder, writer.mean())
    info = {"classes": CLASSES, "width": size, "height": size, "channels": channels, "resize": "squash",
            "encoding": "none", "images": {"train": images}}
    (folder / "info.json").write_text(json.dumps(info))
    return folder


def write_job(root: Path, name: str, spec: ModelSpec) -> JobFolder:
    """The folder ``root/name`` of a job to train ``spec``."""
    job = root / name
    job.mkdir(parents=True)
    (job / "spec.json").write_text(spec.model_dump_json())
    return JobFolder(job)


def run_job(root: Path, name: str, spec: ModelSpec, gpus: int, ddp_one: bool = False, new_session: bool = False,
            **env: str) -> Path:
    """Train ``spec`` as a job on the first ``gpus`` GPUs (0: the CPU, spec.processes of it);
    ``new_session``: its command in a session of its own, as a server's runner starts jobs."""
    folder = write_job(root, name, spec)
    job = folder.path
    if ddp_one:
        command = distributed_command("trainyard.training.run", folder, 1)
    else:
        command = get_kind("model").command(folder, list(range(gpus)))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(map(str, range(gpus))), **env}
    if gpus:  # as the runner tells a job of its GPUs: one that cannot use them fails, loudly
        env[LEASED_GPUS] = ",".join(map(str, range(gpus)))
    with open(job / "output.txt", "wb") as out:
        code = subprocess.call(command, cwd=job, env=env, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=new_session)
    return check_done(job, code, job / "output.txt")


def check_done(job: Path, code: int, output: Path) -> Path:
    """``job``, if its command exited 0 and its last status is done; else stop with its output's tail."""
    final = [e for e in read_events(job / "events.jsonl", {"status"})][-1:]
    if code != 0 or not final or final[0]["status"] != "done":
        tail = output.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{job.name} did not finish (exit {code}): {final}\n{tail}")
    return job


def throughput(job: Path, batches_per_epoch: int, global_batch: int, warmup: int) -> float:
    """Images/second between the first loss read-back after ``warmup`` steps and the last one."""
    points = [(round(e["epoch"] * batches_per_epoch), e["time"])
              for e in read_events(job / "events.jsonl", {"metric"}) if e["name"] == "train_loss"]
    timed = [p for p in points if p[0] >= warmup]
    if len(timed) < 2:
        raise SystemExit(f"{job.name}: too few read-backs after warm-up; raise --steps")
    (b0, t0), (b1, t1) = timed[0], timed[-1]
    return (b1 - b0) * global_batch / max(t1 - t0, 1e-9)


def job_facts(job: Path) -> dict:
    """What the job says it ran with (its log) and its peak GPU memory (its events), for a row."""
    log = (job / "log.txt").read_text(errors="replace")
    precision = re.search(r" \((fp32|bf16|fp16)\); ", log)
    layout = re.search(r"memory layout (\S+), torch\.compile (on|off)", log)
    peak = [e for e in read_events(job / "events.jsonl", {"gpu_memory"})]
    return {"precision": precision.group(1) if precision else "?",
            "channels_last": (layout.group(1) == "channels_last") if layout else "?",
            "compile": (layout.group(2) == "on") if layout else "?",
            "peak_gpu_mib": round(peak[-1]["peak_allocated"] / 2**20) if peak else None}


def losses(job: Path) -> list[float]:
    return [e["value"] for e in read_events(job / "events.jsonl", {"metric"}) if e["name"] == "train_loss"]


def gpu_mode(args, root: Path, gpus: int) -> list[dict]:
    counts = [int(c) for c in args.counts.split(",")] if args.counts else _doublings(gpus)
    counts = [c for c in counts if c <= gpus]
    most = max(counts)
    images = max(args.images, 12 * args.batch * most)  # >= 12 steps an epoch at the largest count
    print(f"writing {images} images of 256x256x3 ...", file=sys.stderr)
    dataset = write_dataset(root / "dataset", images, 256, 3)
    rows = []
    for network in args.networks.split(","):
        base = None
        runs = [(1, True)] if args.ddp_one else []
        for count, ddp_one in [(c, False) for c in counts] + runs:
            batch = args.batch
            per_epoch = images // (batch * count)
            spec = ModelSpec(dataset_id="bench", dataset_dir=str(dataset), network=network, batch_size=batch,
                             crop=224, epochs=(args.steps + args.warmup) / per_epoch, seed=0,
                             val_interval=0, snapshot_interval=0, compile=args.compile,
                             precision=args.precision, lr={"policy": "fixed", "base_lr": 0.01})
            label = f"{count} (DDP)" if ddp_one else str(count)
            print(f"{network} on {label} GPU(s) ...", file=sys.stderr)
            job = run_job(root, f"{network}-{count}{'-ddp' if ddp_one else ''}", spec, count, ddp_one)
            rate = throughput(job, per_epoch, batch * count, args.warmup)
            base = base or rate
            rows.append({"network": network, "gpus": label, "global_batch": batch * count,
                         "images_per_second": round(rate, 1), "speedup": round(rate / base, 3),
                         "efficiency": round(rate / base / count, 3), **job_facts(job)})
    return rows


def cpu_mode(args, root: Path) -> list[dict]:
    """No GPU: 1 process with batch 2B against 2 gloo processes with batch B (correctness)."""
    dataset = write_dataset(root / "dataset", 512, 28, 1)
    batch = 16
    rows, jobs = [], {}
    for processes in (1, 2):
        spec = ModelSpec(dataset_id="bench", dataset_dir=str(dataset), network="lenet", precision=args.precision,
                         batch_size=2 * batch // processes, processes=processes, epochs=3, seed=0,
                         val_interval=1, snapshot_interval=0, lr={"policy": "fixed", "base_lr": 0.01})
        # One OpenMP thread per process (DDP ranks get cores / ranks): spinning threads on a
        # shared CPU distort the figures more than anything measured here.
        threads = str(max(1, (os.cpu_count() or 1) // 2))
        jobs[processes] = job = run_job(root, f"cpu-{processes}", spec, 0, OMP_NUM_THREADS=threads)
        rate = throughput(job, 512 // (2 * batch), 2 * batch, 2)
        rows.append({"network": "lenet", "processes": processes, "global_batch": 2 * batch,
                     "images_per_second": round(rate, 1), **job_facts(job)})
    one, two = (np.array(losses(jobs[p])) for p in (1, 2))
    difference = float(np.abs(one - two).max()) if len(one) == len(two) else float("inf")
    for row in rows:
        row["max_loss_difference"] = difference
    print("(CPU images/second are for information only; correctness is the point here)", file=sys.stderr)
    print(f"train losses of 1 process (batch {2 * batch}) and 2 processes (batch {batch} each): "
          f"largest difference {difference:.2e} over {len(one)} read-backs", file=sys.stderr)
    if difference > 1e-4:
        raise SystemExit("FAILED: 2 processes do not reach the losses of 1 process")
    return rows


def _doublings(limit: int) -> list[int]:
    counts = [1]
    while counts[-1] * 2 <= limit:
        counts.append(counts[-1] * 2)
    return counts + ([limit] if counts[-1] != limit else [])


def print_table(rows: list[dict]) -> None:
    keys = list(rows[0])
    widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
    print("  ".join(k.ljust(widths[k]) for k in keys))
    for row in rows:
        print("  ".join(str(row[k]).ljust(widths[k]) for k in keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", default="googlenet,resnet50")
    parser.add_argument("--counts", default="", help="GPU counts, e.g. 1,2,4 (default 1, 2, 4 ... all)")
    parser.add_argument("--batch", type=int, default=128, help="batch size per GPU")
    parser.add_argument("--steps", type=int, default=50, help="timed optimizer steps per run")
    parser.add_argument("--warmup", type=int, default=15, help="steps before timing starts")
    parser.add_argument("--images", type=int, default=4096, help="training images (at least)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the network")
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16", "fp16"], default="auto",
                        help="the jobs' precision (auto: bf16 from Ampere on, fp16 before, fp32 on the CPU)")
    parser.add_argument("--no-ddp-one", dest="ddp_one", action="store_false",
                        help="skip the 1-GPU run through torch.distributed.run")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument("--cluster", choices=["ray"], help="compare a local run with one through Ray")
    parser.add_argument("--rounds", type=int, default=2, help="--cluster: local/Ray pairs, alternating")
    parser.add_argument("--keep", type=Path, help="work in this folder (kept) instead of a temporary one")
    args = parser.parse_args()

    import torch  # after argparse: --help stays quick

    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        gpus = torch.cuda.device_count()
        if args.cluster:
            from scaling_cluster import cluster_mode

            rows = cluster_mode(args, root, gpus, run_job, throughput, write_dataset)
        else:
            rows = gpu_mode(args, root, gpus) if gpus else cpu_mode(args, root)
    print_table(rows)
    if gpus and not args.cluster:
        low = [r for r in rows if r["efficiency"] < 0.9]
        print(f"efficiency >= 0.9 at every count: {'yes' if not low else 'NO: ' + str(low)}")
    print(f"({time.time() - started:.0f} s; {gpus} GPU(s): {torch.cuda.get_device_name(0) if gpus else 'none'})")
    if args.json:
        args.json.write_text(json.dumps({"gpus": gpus, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
