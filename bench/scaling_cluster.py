"""``bench/scaling.py --cluster ray``: the same job on this machine (torch.distributed.run) and
through Ray (trainyard's cluster launcher) at the same worker count.

Ray's placement should cost start-up time, not throughput: the figure is images/second through
Ray over images/second locally (aim: 0.95 or more), and the start-up seconds of each (from the
job's command to the training loop's first line in log.txt). The Ray cluster is the one at
RAY_ADDRESS if set (a real multi-node cluster), else one started here for the run with one node
holding this machine's CPUs and GPUs.

On GPUs: every GPU (or ``--counts``' largest), the first of ``--networks``, batch ``--batch``
per GPU. Without GPUs: LeNet as 2 gloo processes, for information (a shared CPU is noisy).
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from trainyard.core.events import read_events
from trainyard.training.spec import ModelSpec


def startup_seconds(job: Path, started: float) -> float:
    """From the job's start to the training loop's first log line ("training <network> ...")."""
    for event in read_events(job / "events.jsonl", {"log"}):
        if event["message"].startswith("training "):
            return event["time"] - started
    raise SystemExit(f"{job.name}: the training never started")


@contextmanager
def ray_cluster(cpus: int, gpus: int):
    """RAY_ADDRESS's cluster, or a one-node cluster on this machine for the length of the run."""
    if os.environ.get("RAY_ADDRESS"):
        yield os.environ["RAY_ADDRESS"]
        return
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # keep 127.0.0.1 (read at import)
    src = str(Path(__file__).resolve().parents[1] / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": cpus, "num_gpus": gpus, "include_dashboard": False, "node_ip_address": "127.0.0.1"})
    os.environ["RAY_ADDRESS"] = cluster.address
    try:
        yield cluster.address
    finally:
        del os.environ["RAY_ADDRESS"]
        cluster.shutdown()


def cluster_mode(args, root: Path, gpus: int, run_job, throughput, write_dataset) -> list[dict]:
    if gpus:
        workers = max(int(c) for c in args.counts.split(",")) if args.counts else gpus
        network, batch, size, channels, crop = args.networks.split(",")[0], args.batch, 256, 3, 224
        images = max(args.images, 12 * batch * workers)
        steps, warmup = args.steps, args.warmup
    else:
        workers, network, batch, size, channels, crop = 2, "lenet", 16, 28, 1, None
        images, steps, warmup = 2048, 200, 20
    print(f"writing {images} images of {size}x{size}x{channels} ...", file=sys.stderr)
    dataset = write_dataset(root / "dataset", images, size, channels)
    per_epoch = images // (batch * workers)
    fields = dict(dataset_id="bench", dataset_dir=str(dataset), network=network, batch_size=batch, crop=crop,
                  epochs=(steps + warmup) / per_epoch, seed=0, val_interval=0, snapshot_interval=0,
                  compile=args.compile, lr={"policy": "fixed", "base_lr": 0.01},
                  processes=1 if gpus else workers)
    device = "gpu" if gpus else "cpu"
    rows = []
    with ray_cluster(cpus=(os.cpu_count() or 1) if gpus else workers, gpus=gpus) as address:
        for where in ("local", "ray"):
            spec = ModelSpec(**fields, cluster={"workers": workers, "device": device} if where == "ray" else None)
            print(f"{network} as {workers} {device.upper()} worker(s), {where} ...", file=sys.stderr)
            started = time.time()
            job = run_job(root, f"{where}-{workers}", spec, workers if gpus else 0)
            rows.append({"network": network, "where": where, "workers": workers, "device": device,
                         "global_batch": batch * workers,
                         "images_per_second": round(throughput(job, per_epoch, batch * workers, warmup), 1),
                         "startup_s": round(startup_seconds(job, started), 1)})
    ratio = rows[1]["images_per_second"] / rows[0]["images_per_second"]
    for row in rows:
        row["ratio_to_local"] = round(row["images_per_second"] / rows[0]["images_per_second"], 3)
    print(f"Ray cluster at {address}: images/second through Ray / locally = {ratio:.3f} (aim >= 0.95)",
          file=sys.stderr)
    return rows
