"""When a rank's Ray worker that leaves the launcher's poll unanswered is taken for lost.

A worker that died is reported by Ray at once (its poll raises); silence is what a node cut off
or hung looks like, and also what a worker that is only slow looks like: a loaded machine, a
worker starved of CPU (Ray starts its workers at niceness 15, which the actor gives up where it
may: RankWorker.take_niceness). So silence alone ends a rank only where its node is gone from
the network too: the launcher tries a TCP connect to the node's raylet, which the node's kernel
answers however busy its processes are. A silent worker on a node that answers is given
ALIVE_ANSWER_S before it is taken for hung, and the launcher says once, in its own output (not
the job's events, which rank 0 alone writes during training), that it waits for it. A node that
answered is not asked again for REPROBE_S: the launcher polls every half second, and a node cut
off in that time is still taken for lost within ANSWER_S + REPROBE_S.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from trainyard.cluster.connect import unreachable

ANSWER_S = 10.0  # silent this long, on a node that does not answer either: lost (cut off, powered off)
ALIVE_ANSWER_S = 60.0  # silent this long although its node answers: hung, taken for lost
PROBE_S = 1.0
REPROBE_S = 5.0  # a node that answered is taken to answer for this long


class Liveness:
    """Whether a rank silent for so long is lost, from its node's raylet address (``raylets``:
    Ray node id -> "ip:port", from ``ray.nodes()`` once the ranks are placed)."""

    def __init__(self, raylets: dict[str, str], labels: list[str]):
        self.raylets, self.labels = raylets, labels  # labels: each rank's node, as messages name it
        self._said: set[int] = set()
        self._answered_at: dict[str, float] = {}  # node id -> when its raylet last answered (monotonic)

    @classmethod
    def of(cls, ray: Any, node_ids: list[str], labels: list[str]) -> Liveness:
        try:
            nodes = {n["NodeID"]: f"{n['NodeManagerAddress']}:{n['NodeManagerPort']}" for n in ray.nodes()}
        except Exception:  # the head busy: silence alone decides, as it did before
            nodes = {}
        return cls({node: nodes[node] for node in node_ids if node in nodes}, labels)

    def lost(self, rank: int, node_id: str, silent_s: float) -> bool:
        """True once a rank's worker, silent ``silent_s``, is taken for lost."""
        if silent_s <= ANSWER_S:
            return False
        if silent_s > ALIVE_ANSWER_S:
            return True
        if not self._answers(node_id):
            return True
        if rank not in self._said:
            self._said.add(rank)
            print(f"rank {rank}'s Ray worker on {self.labels[rank]} has not answered for {silent_s:.0f} s, but its "
                  f"node answers: waiting up to {ALIVE_ANSWER_S:.0f} s for it", file=sys.stderr, flush=True)
        return False

    def _answers(self, node_id: str) -> bool:
        """Whether the node's raylet answers a TCP connect (asked at most every REPROBE_S)."""
        now = time.monotonic()
        if now - self._answered_at.get(node_id, -REPROBE_S) < REPROBE_S:
            return True
        raylet = self.raylets.get(node_id)
        if raylet is None or unreachable(raylet, timeout_s=PROBE_S):
            return False
        self._answered_at[node_id] = now
        return True
