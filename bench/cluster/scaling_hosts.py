"""``bench/cluster/scaling.py --cluster ray`` across hosts: Ray ÷ torchrun on the same namespace hosts.

Builds the hosts of tests/cluster/netns.py (a head with no CPUs and two workers of one CPU each,
Linux network namespaces on one bridge, Ray started in each with ``ray start``) and trains the
same LeNet job three ways, alternating, round after round:

- ``local``: 2 processes on this machine (torch.distributed.run, loopback), as
  ``bench/cluster/scaling.py --cluster ray`` compares against;
- ``hosts``: trainyard without Ray across the same two worker hosts: ``--nnodes 2``, one
  process on each host (torch.distributed.run, meeting at w1's address), their gloo traffic
  crossing the bridge, each at one thread (``OMP_NUM_THREADS=1``: the one CPU Ray grants);
- ``ray``: the cluster launcher (started on the head host, as a server there would) placing one
  rank on each worker host.

``ray`` ÷ ``hosts`` is what going through Ray costs across hosts: the same hosts, the same
network, the same threads, and the same scheduling (each host's processes in a session of their
own: the kernel's autogroup gives each node's rank its own share, as each raylet's session does).
``ray`` ÷ ``local`` adds what crossing hosts costs on top. All sides share the same 2 physical
cores, so the ratios say what the path costs, not what more hardware gives. Images per
CPU-second (the ranks' own CPU time) is printed beside images/second; it does not depend on the
share of a loaded machine each side got.
Everything is removed at the end. Needs root and ``ip netns`` (it says why not otherwise).

    python bench/cluster/scaling_hosts.py [--rounds 2] [--steps 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests/ helpers from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its siblings, whichever way it is started
from scaling import check_done, print_table, run_job, throughput, write_dataset, write_job  # noqa: E402
from scaling_cluster import CPU_IMAGES, CPU_SHAPE, CPU_SIZE, CpuMeter, Shape, per_cpu_ratio, speed_ratio  # noqa: E402

from tests.cluster.netns import RAY_ADDRESS, RAY_ENV, Hosts, address, ray_start, why_not  # noqa: E402
from trainyard.jobs.kinds.registry import get_kind  # noqa: E402

SIDES = ("local", "hosts", "ray")
NODES = ("w1", "w2")  # the worker hosts, node rank 0 and 1
RENDEZVOUS_PORT = 29500


def on_hosts(hosts: Hosts, root: Path, name: str, specs: dict[str, object], env: dict[str, str]) -> list[Path]:
    """Each host's job (``specs``: host -> spec) started on that host in a session of its own,
    waited for; the jobs, in the order given, once every one has finished."""
    started = []
    for host, spec in specs.items():
        folder = write_job(root, f"{name}-{host}", spec)
        command = get_kind("model").command(folder, [])
        started.append((folder.path, hosts.start(f"{name}-{host}", host, command, {**RAY_ENV, **env})))
    try:
        codes = [proc.wait(timeout=1800) for _, proc in started]
    finally:
        for host in specs:
            hosts.kill(f"{name}-{host}")
    return [check_done(job, code, root / f"{name}-{host}.txt") for (job, _), code, host in zip(started, codes, specs)]


def run_side(where: str, round_: int, hosts: Hosts, root: Path, dataset: Path, shape: Shape) -> dict:
    """One run of ``where``'s side, as a table row."""
    name = f"{where}-{round_}"
    print(f"{shape}, {where}, round {round_ + 1} ...", file=sys.stderr)
    started = time.time()
    if where == "local":
        with CpuMeter(root / name) as meter:
            job = run_job(root, name, shape.spec(dataset, processes=shape.workers), 0, new_session=True)
    elif where == "hosts":
        master = f"{address(NODES[0])}:{RENDEZVOUS_PORT + round_}"  # a fresh port: no TIME_WAIT from the last
        specs = {host: shape.spec(dataset, processes=1, nnodes=len(NODES), node_rank=rank, master=master,
                                  id=f"{name}-{host}")  # each node's own job, as each node's `trainyard train` makes
                 for rank, host in enumerate(NODES)}
        with CpuMeter(*(root / f"{name}-{host}" for host in NODES)) as meter:
            job = on_hosts(hosts, root, name, specs, {"OMP_NUM_THREADS": "1"})[0]
    else:
        spec = shape.spec(dataset, processes=shape.workers, cluster=shape.placement)
        with CpuMeter(root / f"{name}-head") as meter:
            job = on_hosts(hosts, root, name, {"head": spec}, {"RAY_ADDRESS": RAY_ADDRESS})[0]
    return shape.row(job, where, round_, started, meter.seconds, throughput)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the three sides, alternating")
    parser.add_argument("--steps", type=int, default=1000,
                        help="timed steps a run (the default keeps a run's start-up, which the CPU-seconds "
                             "include, a small part)")
    args = parser.parse_args()
    shape = replace(CPU_SHAPE, steps=args.steps)
    why = why_not()
    if why:
        sys.exit(f"cannot build namespace hosts here: {why}")
    root = Path(tempfile.mkdtemp(prefix="trainyard-scaling-hosts-"))
    hosts = Hosts(root)
    started = time.time()
    try:
        hosts.build()
        ray_start(hosts, "head", *NODES)
        dataset = write_dataset(root / "dataset", CPU_IMAGES, CPU_SIZE, 1)
        rows = [run_side(where, round_, hosts, root, dataset, shape)
                for round_ in range(args.rounds) for where in SIDES]
    finally:
        hosts.remove()
    print_table(rows)
    for side, base in (("ray", "hosts"), ("ray", "local"), ("hosts", "local")):
        print(f"{side} / {base}: images/second {speed_ratio(rows, side, base):.3f}, images per CPU-second "
              f"{per_cpu_ratio(rows, side, base):.3f}")
    print(f"(aim: ray / hosts >= 0.9; {args.rounds} round(s), {time.time() - started:.0f} s, load average "
          f"{os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
