"""``bench/scaling.py --cluster ray`` across hosts: Ray ÷ local on the suite's namespace hosts.

Builds the hosts of tests/cluster/netns.py (a head with no CPUs and two workers of one CPU each,
Linux network namespaces on one bridge, Ray started in each with ``ray start``), then runs
``bench/scaling.py --cluster ray`` on the head host with RAY_ADDRESS at its Ray: the local side
is torch.distributed.run's 2 processes on this machine's CPUs, the Ray side one rank on each
worker host, their gloo traffic crossing the bridge. Both sides share the same 2 physical cores,
so the ratio says what going through Ray and across hosts costs, not what more hardware gives.
On a machine loaded by others, images/second leans towards Ray: each worker host's Ray runs in a
session of its own, so its rank is in a scheduling group of its own (the kernel's autogroup),
while the two local ranks share torch.distributed.run's one; images per CPU-second (printed
beside it) does not depend on that share.
Everything is removed at the end. Needs root and ``ip netns`` (it says why not otherwise).

    python bench/scaling_hosts.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ helpers from a checkout
from tests.cluster.netns import RAY_ADDRESS, RAY_ENV, Hosts, ray_start, why_not  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="local/Ray pairs, alternating")
    args = parser.parse_args()
    why = why_not()
    if why:
        sys.exit(f"cannot build namespace hosts here: {why}")
    root = Path(tempfile.mkdtemp(prefix="trainyard-scaling-hosts-"))
    hosts = Hosts(root)
    try:
        hosts.build()
        ray_start(hosts, "head", "w1", "w2")
        bench = hosts.start("bench", "head", [sys.executable, str(ROOT / "bench" / "scaling.py"), "--cluster", "ray",
                                              "--rounds", str(args.rounds)],
                            {**RAY_ENV, "RAY_ADDRESS": RAY_ADDRESS})
        code = bench.wait()
        print((root / "bench.txt").read_text())
        if code:
            sys.exit(f"bench/scaling.py ended with {code}")
    finally:
        hosts.remove()


if __name__ == "__main__":
    main()
