"""What the namespaces cost: bwrap + Landlock against Landlock alone, side by side in one process.

Each mode is selected by ``TRAINYARD_SANDBOX_NAMESPACES`` (1: bubblewrap namespaces + Landlock +
seccomp + rlimits; 0: Landlock + seccomp + rlimits, the previous sandbox) and everything is
started the same way in both, alternating modes round by round so that the machine's load
falls on both alike:

- **check, warm**: a network check forked from a warm checker (sandbox/zygote.py), the path
  every check after the first takes: wall seconds per check, the child's own CPU seconds;
- **checker start**: starting the warm checker (bwrap, Python, torch, torchvision, timm);
- **check, spawned**: a check in a fresh interpreter (no warm checker: workers and exports
  start this way inside namespaces), wall and CPU seconds of the whole process tree;
- **job start**: a confined training job's start as the runner makes it (the supervisor, then
  bwrap, then the job's interpreter importing torch), to its exit;
- **training**: images/s of a small custom CNN trained in the job's sandbox against the same
  script unconfined (the ratio is what the sandbox costs a running job).

    python bench/security/sandbox_cost.py [--rounds 3] [--steps 40]

``--compare additions`` measures instead what the network and memory side adds, both modes
inside the namespaces: a cgroup per confined process group (sandbox/cgroups.py) against rlimits
alone (``TRAINYARD_SANDBOX_CGROUPS=0``), and a cluster rank's start with its nftables hold and
the lock after its group formed (sandbox/rank_network.py) against a rank on its node's network;
the **rank start** row is that job start as a rank (not training; no training rows).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

from trainyard.networks.isolated import CHECKER, START_TIMEOUT_S
from trainyard.sandbox import cgroups, namespaces, rank_network
from trainyard.sandbox.childproc import Child
from trainyard.sandbox.policy import Policy, default_policy
from trainyard.sandbox.zygote import Zygote

HOLD = "BENCH_RANK_HOLD"  # this script's own switch: a rank started with the nftables hold
COMPARISONS = {
    "namespaces": {"landlock only": {namespaces.SETTING: "0"}, "bwrap + landlock": {namespaces.SETTING: "1"}},
    "additions": {"rlimits, node network": {namespaces.SETTING: "1", cgroups.SETTING: "0", HOLD: "0"},
                  "cgroup, rank hold": {namespaces.SETTING: "1", cgroups.SETTING: "1", HOLD: "1"}},
}
SOURCE = """
from torch import nn
def build(num_classes, in_channels, image_size):
    return nn.Sequential(nn.Conv2d(in_channels, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * image_size * image_size, num_classes))
"""
REQUEST = {"source": SOURCE, "network": None, "filename": "network.py", "input_size": None,
           "num_classes": 10, "in_channels": 3, "image_size": 32}
TRAIN = """
import sys, time, torch
from torch import nn
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                    nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
for step in range(5 + int(sys.argv[1])):
    if step == 5:
        start, cpu = time.perf_counter(), time.process_time()
    opt.zero_grad(); nn.functional.cross_entropy(net(x), y).backward(); opt.step()
images = 64 * int(sys.argv[1])
print(images / (time.perf_counter() - start), images / (time.process_time() - cpu))
"""


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every process below it, read while they live (a killed bwrap's
    children are never reaped into this process's RUSAGE_CHILDREN)."""
    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            continue
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check(zygote: Zygote | None) -> tuple[float, float]:
    """(wall s, CPU s) of one check; CPU is the child's own (warm) or its whole tree (spawned)."""
    start = time.perf_counter()
    child = Child("trainyard.networks.isolated:handle", default_policy(), what="the check",
                  start_timeout=START_TIMEOUT_S, zygote=zygote)
    try:
        answer = child.ask(REQUEST, 600)
        assert answer.get("ok"), answer
        cpu = _tree_cpu(child.pid)
    finally:
        child.stop()
    return time.perf_counter() - start, cpu


def job_start(scratch: Path, rank: bool = False) -> tuple[float, float]:
    """(wall s, CPU s) of a confined job that imports torch and ends, started as the runner does;
    ``rank``: as a cluster rank (its node's network; held to a peer and locked, in HOLD mode)."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    policy = Policy(write=[str(folder), "/dev/shm"], processes=True, open_files=65536, max_processes=256,
                    tmpdir="/tmp" if namespaces.available() else str(folder), cwd=str(folder), memory_mb=4096,
                    network=rank, host_network=rank)
    code = "import torch; torch.ones(1)"
    if rank and os.environ.get(HOLD) == "1":
        policy.peers, policy.uid = ["192.0.2.1"], rank_network.job_uid(folder.name)
        code += "; from trainyard.sandbox.rank_network import lock_network; lock_network()"
    namespaces.give(folder, uid=policy.uid)
    argv = [sys.executable, "-m", "trainyard.sandbox.supervisor", policy.to_json(), "--", sys.executable, "-c", code]
    cpu0, start = _children_cpu(), time.perf_counter()
    subprocess.run(argv, check=True, cwd=folder, start_new_session=True)
    return time.perf_counter() - start, _children_cpu() - cpu0


def train_speed(scratch: Path, steps: int, confined: bool) -> tuple[float, float]:
    """(images per wall second, images per CPU second) of the small CNN."""
    script = scratch / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    argv = [sys.executable, str(script), str(steps)]
    if confined:
        policy = Policy(read=[str(scratch)], write=["/dev/shm"], processes=True, open_files=65536,
                        tmpdir="/tmp")
        argv = namespaces.command(policy, argv)
    wall, cpu = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split()[-2:]
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--checks", type=int, default=5, help="warm checks per round")
    parser.add_argument("--steps", type=int, default=40, help="training steps timed per run")
    parser.add_argument("--compare", choices=tuple(COMPARISONS), default="namespaces")
    args = parser.parse_args()
    modes = COMPARISONS[args.compare]
    if not namespaces.available():
        sys.exit(f"no namespaces here: {namespaces.unavailable_reason()}")
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        os.chmod(scratch, 0o755)
        for _ in range(args.rounds):
            for mode, settings in modes.items():
                os.environ.update(settings)
                cgroups._probe.cache_clear()  # read once per process otherwise
                zygote = Zygote(CHECKER.preload)
                start = time.perf_counter()
                assert zygote.warm_up() and zygote._proc is not None, "the checker did not start"
                started = (time.perf_counter() - start, _tree_cpu(zygote._proc.pid))
                figures.setdefault((mode, "checker start"), []).append(started)
                try:
                    check(zygote)  # the first check imports what preloading left (not timed)
                    for _ in range(args.checks):
                        figures.setdefault((mode, "check, warm"), []).append(check(zygote))
                finally:
                    zygote.close()
                figures.setdefault((mode, "check, spawned"), []).append(check(None))
                figures.setdefault((mode, "job start"), []).append(job_start(scratch))
                if args.compare == "additions":
                    figures.setdefault((mode, "rank start"), []).append(job_start(scratch, rank=True))
        speeds: dict[str, list[tuple[float, float]]] = {"outside": [], "inside": []}
        os.environ[namespaces.SETTING] = "1"
        for _ in range(args.rounds if args.compare == "namespaces" else 0):
            speeds["outside"].append(train_speed(scratch, args.steps, False))
            speeds["inside"].append(train_speed(scratch, args.steps, True))
    report(figures, speeds, tuple(modes))


def report(figures: dict[tuple[str, str], list[tuple[float, float]]],
           speeds: dict[str, list[tuple[float, float]]], modes: tuple[str, ...]) -> None:
    old, new = modes
    print(f"{'what':<16} {old + ' wall':>20} {new + ' wall':>24} {'ratio':>7} {old + ' CPU':>19} "
          f"{new + ' CPU':>23} {'ratio':>7}")
    for what in ("check, warm", "checker start", "check, spawned", "job start", "rank start"):
        if (old, what) not in figures:
            continue
        a, b = figures[(old, what)], figures[(new, what)]
        wall_a, wall_b = statistics.median(w for w, _ in a), statistics.median(w for w, _ in b)
        cpu_a, cpu_b = statistics.median(c for _, c in a), statistics.median(c for _, c in b)
        cpu_ratio = f"{cpu_b / cpu_a:6.2f}x" if cpu_a else "     -"
        print(f"{what:<16} {wall_a:>18.3f} s {wall_b:>22.3f} s {wall_b / wall_a:6.2f}x {cpu_a:>17.3f} s "
              f"{cpu_b:>21.3f} s {cpu_ratio}")
    for index, per in ((0, "wall second"), (1, "CPU second")) if speeds["outside"] else ():
        outside = statistics.median(s[index] for s in speeds["outside"])
        inside = statistics.median(s[index] for s in speeds["inside"])
        print(f"training images per {per}: outside {outside:.0f}, inside bwrap + landlock {inside:.0f}, "
              f"inside/outside {inside / outside:.3f} (runs: {[round(s[index]) for s in speeds['outside']]} / "
              f"{[round(s[index]) for s in speeds['inside']]})")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores "
          "(medians over the rounds)")


if __name__ == "__main__":
    main()
