"""``bench/cluster/scaling.py --cluster ray``: the same job on this machine (torch.distributed.run) and
through Ray (trainyard's cluster launcher) at the same worker count, alternating.

Ray's placement should cost start-up time, not throughput: the figure is images/second through
Ray over images/second locally (aim: 0.9 or more at 2 CPU workers), with the CPU-seconds the
training processes used beside the wall time of each run, and the start-up seconds (from the
job's command to the training loop's first line in log.txt). Images per CPU-second of the ranks
tell a cost through Ray (more CPU for the same images) from a smaller share of a loaded CPU.

Both sides are started the same way: each job's command in a session of its own
(start_new_session), and the Ray cluster, when this script starts one, in a session of its own
too (``ray start --head --block``), so the kernel's per-session CPU sharing (autogroup) treats
the local ranks (in their launcher's session) and the Ray ranks (in their raylet's) alike. The
Ray cluster is the one at RAY_ADDRESS if set (a real multi-node cluster), else one started here
for the run with one node holding this machine's CPUs and GPUs.

On GPUs: every GPU (or ``--counts``' largest), the first of ``--networks``, batch ``--batch``
per GPU. Without GPUs: LeNet as 2 gloo processes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from trainyard.core.events import read_events
from trainyard.training.spec import ModelSpec

RAY = Path(sys.executable).with_name("ray")


def startup_seconds(job: Path, started: float) -> float:
    """From the job's start to the training loop's first log line ("training <network> ...")."""
    for event in read_events(job / "events.jsonl", {"log"}):
        if event["message"].startswith("training "):
            return event["time"] - started
    raise SystemExit(f"{job.name}: the training never started")


class CpuMeter:
    """CPU-seconds of the training processes of one job (or of the jobs of one run's nodes),
    wherever they run on this machine: under torch.distributed.run or under Ray's workers,
    sampled every 0.2 s while the job runs."""

    def __init__(self, *jobs: Path):
        self.jobs, self.seen, self._stop = {str(job) for job in jobs}, {}, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seconds(self) -> float:
        return sum(self.seen.values())

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for proc in psutil.process_iter(["cmdline"]):
                cmdline = proc.info["cmdline"] or []
                # the ranks themselves: not torch.distributed.run, whose cmdline names them too
                # (and whose children_* times would count them again once it reaps them)
                if "trainyard.training.run" in cmdline and self.jobs.intersection(cmdline) \
                        and "torch.distributed.run" not in cmdline:
                    try:
                        times = proc.cpu_times()
                        self.seen[proc.pid] = times.user + times.system
                    except psutil.Error:
                        continue


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def ray_cluster(cpus: int, gpus: int, log: Path):
    """RAY_ADDRESS's cluster, or a one-node cluster on this machine (its own session) for the run."""
    if os.environ.get("RAY_ADDRESS"):
        yield os.environ["RAY_ADDRESS"]
        return
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # keep 127.0.0.1 (Ray reads it at import)
    src = str(Path(__file__).resolve().parents[2] / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    address, head = _start_head(cpus, gpus, log)
    os.environ["RAY_ADDRESS"] = address
    try:
        yield address
    finally:
        del os.environ["RAY_ADDRESS"]
        _end_session(head)


def _start_head(cpus: int, gpus: int, log: Path, tries: int = 3) -> tuple[str, subprocess.Popen]:
    """``ray start --head --block`` in a session of its own, until it says it started (Ray gives
    its node 30 s, which a loaded machine can miss: then again)."""
    for _ in range(tries):
        port = _free_port()
        # Every port Ray would otherwise take a fixed default for: other Rays may run on this machine.
        ports = [f"--{name}={_free_port()}" for name in (
            "dashboard-agent-listen-port", "dashboard-agent-grpc-port", "metrics-export-port",
            "runtime-env-agent-port", "node-manager-port", "object-manager-port")]
        offset = log.stat().st_size if log.exists() else 0
        head = subprocess.Popen(
            [str(RAY), "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1", *ports,
             f"--num-cpus={cpus}", f"--num-gpus={gpus}", "--include-dashboard=false", "--disable-usage-stats"],
            # a loaded machine starts Ray's dashboard agent slowly: give it longer than Ray's default
            env={**os.environ, "RAY_agent_register_timeout_ms": "120000"}, start_new_session=True,
            stdout=log.open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while head.poll() is None and time.monotonic() < deadline:
            if "Ray runtime started" in log.read_text(errors="replace")[offset:]:
                time.sleep(5)  # it can still fail just after saying so: it must still run then
                if head.poll() is None:
                    return f"127.0.0.1:{port}", head
            time.sleep(1)
        _end_session(head)
    raise SystemExit(f"ray start --head did not come up in {tries} tries:\n{log.read_text()[-2000:]}")


def _end_session(head: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, every process of the head's session (its raylet, workers, ranks)."""
    members = [p for p in psutil.process_iter() if _sid(p.pid) == head.pid]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in members:
            try:
                proc.send_signal(sig)
            except psutil.Error:
                pass
        _, members = psutil.wait_procs(members, timeout=10)
        if not members:
            break
    head.wait()


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


@dataclass(frozen=True)
class Shape:
    """What both sides of a comparison train: the network, at ``workers`` ranks of ``batch``
    each, for ``warmup`` + ``steps`` steps of which the last ``steps`` are timed."""

    network: str
    workers: int
    device: str
    batch: int
    steps: int
    warmup: int
    per_epoch: int  # steps an epoch at ``workers`` ranks

    def __str__(self) -> str:
        return f"{self.network} as {self.workers} {self.device.upper()} worker(s)"

    @property
    def epochs(self) -> float:
        return (self.steps + self.warmup) / self.per_epoch

    @property
    def placement(self) -> dict:
        return {"workers": self.workers, "device": self.device}

    def spec(self, dataset: Path, **settings) -> ModelSpec:
        """The job: this shape on ``dataset`` at a fixed LR, without validation or snapshots."""
        return ModelSpec(dataset_id="bench", dataset_dir=str(dataset), network=self.network, batch_size=self.batch,
                         epochs=self.epochs, seed=0, val_interval=0, snapshot_interval=0,
                         lr={"policy": "fixed", "base_lr": 0.01}, **settings)

    def row(self, job: Path, where: str, round_: int, started: float, cpu_s: float, throughput) -> dict:
        """A table row for ``job`` (``where`` it ran), started at ``started``, its ranks having used ``cpu_s``."""
        global_batch = self.batch * self.workers
        return {"network": self.network, "where": where, "round": round_ + 1, "workers": self.workers,
                "device": self.device, "global_batch": global_batch,
                "images_per_second": round(throughput(job, self.per_epoch, global_batch, self.warmup), 1),
                "wall_s": round(time.time() - started, 1), "cpu_s": round(cpu_s, 1),
                "images_per_cpu_s": round((self.steps + self.warmup) * global_batch / max(cpu_s, 1e-9), 1),
                "startup_s": round(startup_seconds(job, started), 1)}


# Without GPUs: LeNet on 2048 28x28 grey images, as 2 ranks of batch 16; small, so that the
# figure is what the launch path costs, not what the network does.
CPU_IMAGES, CPU_SIZE = 2048, 28
CPU_SHAPE = Shape("lenet", 2, "cpu", 16, 200, 20, CPU_IMAGES // (16 * 2))


def cluster_mode(args, root: Path, gpus: int, run_job, throughput, write_dataset) -> list[dict]:
    if gpus:
        workers = max(int(c) for c in args.counts.split(",")) if args.counts else gpus
        network, batch, size, channels, crop = args.networks.split(",")[0], args.batch, 256, 3, 224
        images = max(args.images, 12 * batch * workers)
        shape = Shape(network, workers, "gpu", batch, args.steps, args.warmup, images // (batch * workers))
    else:
        shape, images, size, channels, crop = CPU_SHAPE, CPU_IMAGES, CPU_SIZE, 1, None
    workers, network, batch = shape.workers, shape.network, shape.batch
    print(f"writing {images} images of {size}x{size}x{channels} ...", file=sys.stderr)
    dataset = write_dataset(root / "dataset", images, size, channels)
    rows = []
    with ray_cluster((os.cpu_count() or 1) if gpus else workers, gpus, root / "ray-head.txt") as address:
        for round_ in range(args.rounds):
            for where in ("local", "ray"):  # alternating: a change in the machine's load hits both
                spec = shape.spec(dataset, crop=crop, compile=args.compile, processes=1 if gpus else workers,
                                  cluster=shape.placement if where == "ray" else None)
                print(f"{shape}, {where}, round {round_ + 1} ...", file=sys.stderr)
                started = time.time()
                name = f"{where}-{workers}-{round_}"
                with CpuMeter(root / name) as meter:
                    job = run_job(root, name, spec, workers if gpus else 0, new_session=True)
                rows.append(shape.row(job, where, round_, started, meter.seconds, throughput))
    ratio = speed_ratio(rows)
    for row in rows:
        row["ratio_to_local"] = round(ratio, 3)
    print(f"Ray cluster at {address}: images/second through Ray / locally = {ratio:.3f} over {args.rounds} "
          f"round(s) (aim >= 0.9); images per CPU-second = {per_cpu_ratio(rows):.3f}; load average "
          f"{os.getloadavg()[0]:.2f}", file=sys.stderr)
    return rows


def speed_ratio(rows: list[dict], side: str = "ray", base: str = "local") -> float:
    """Images/second of ``side`` over ``base``'s, summed over the rounds."""
    total = {w: sum(r["images_per_second"] for r in rows if r["where"] == w) for w in (side, base)}
    return total[side] / total[base]


def per_cpu_ratio(rows: list[dict], side: str = "ray", base: str = "local") -> float:
    """Images per CPU-second of ``side``'s ranks over ``base``'s: what going through Ray costs
    in work, whatever share of a loaded CPU each side got (images/second depends on that share)."""
    images = {w: sum(r["images_per_cpu_s"] * r["cpu_s"] for r in rows if r["where"] == w) for w in (side, base)}
    seconds = {w: sum(r["cpu_s"] for r in rows if r["where"] == w) for w in (side, base)}
    return (images[side] / max(seconds[side], 1e-9)) / (images[base] / max(seconds[base], 1e-9))
