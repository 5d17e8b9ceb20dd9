"""What a cluster job asks Ray for, and how its ranks are laid out over the nodes Ray chose.

Pure functions and data, no ray: the launcher feeds them what the actors report, and the tests
check them without a cluster.

Ranks are numbered node by node (the node of bundle 0 first), as torch.distributed.run numbers
them across ``--nnodes``: LOCAL_RANK counts the ranks on one node, so on GPUs rank ``r`` uses
the ``LOCAL_RANK``-th of its node's job GPUs, and ranks that share a node are neighbours (NCCL
keeps their traffic inside the node).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainyard.cluster.job_spec import LaunchSpec
from trainyard.core.vocabulary import gpu_resource


@dataclass(frozen=True)
class Placement:
    """``workers`` ranks, each on one GPU (and a CPU core) or on one CPU core."""

    workers: int
    device: str = "cpu"  # "cpu" | "gpu"

    @classmethod
    def from_spec(cls, spec: LaunchSpec) -> Placement:
        """What the job's spec asks for (the launcher's view of it)."""
        return cls(spec.cluster.workers, spec.cluster.device)

    @property
    def resource(self) -> str:
        return "GPU" if self.device == "gpu" else "CPU"

    def bundles(self) -> list[dict[str, float]]:
        one = {"GPU": 1.0, "CPU": 1.0} if self.device == "gpu" else {"CPU": 1.0}
        return [dict(one) for _ in range(self.workers)]

    def actor_options(self) -> dict:
        return {"num_cpus": 1, "num_gpus": 1 if self.device == "gpu" else 0}

    def waiting_detail(self, available: dict[str, float]) -> str:
        """'waiting for 8 GPUs on the cluster (5 free)': what a pending placement waits for."""
        free = int(available.get(self.resource, 0))
        noun = self.resource + ("s" if self.workers != 1 else "")
        if free >= self.workers:  # Ray's figures lag its reservations: free enough, not yet placed
            return f"waiting for Ray to reserve {self.workers} {noun} on the cluster"
        return f"waiting for {self.workers} {noun} on the cluster ({free} free)"


@dataclass(frozen=True)
class WorkerInfo:
    """Where one actor runs, as it reports it (`worker.RankWorker.where`)."""

    node_id: str
    host: str  # the node's IP address, which the other ranks can reach
    hostname: str = ""
    gpu_ids: list[str] = field(default_factory=list)  # physical GPU ids on its node
    interface: str = ""  # the network interface holding ``host`` on its node ("" if none does)

    @property
    def node_label(self) -> str:
        """How messages name the node: 'node 10.0.0.7 (3f2a9c1e)'."""
        return f"node {self.hostname or self.host} ({self.node_id[:8]})"


def rank_order(infos: list[WorkerInfo]) -> list[int]:
    """Indices into ``infos`` in rank order: grouped by node, nodes in order of first bundle."""
    nodes: dict[str, list[int]] = {}
    for index, info in enumerate(infos):
        nodes.setdefault(info.node_id, []).append(index)
    return [index for members in nodes.values() for index in members]


def rank_environments(ranked: list[WorkerInfo], master_port: int, run_id: str, device: str) -> list[dict[str, str]]:
    """The environment of each rank's training process, as torch.distributed.run sets it.

    One rank gets no RANK / WORLD_SIZE: it trains as one local process does (no process group,
    no DDP), so its checkpoints and resume are a local job's. Several get the rendezvous at rank
    0's node address as Ray reports it (no host name to resolve), and gloo / NCCL are told the
    network interface that holds each node's address (see `WorkerInfo.interface`).
    """
    by_node: dict[str, list[int]] = {}
    for rank, info in enumerate(ranked):
        by_node.setdefault(info.node_id, []).append(rank)
    node_index = {node: i for i, node in enumerate(by_node)}
    envs = []
    for rank, info in enumerate(ranked):
        peers = by_node[info.node_id]
        # run.py ends with its parent (here the actor) when this is set, as under torchrun
        env = {"TORCHELASTIC_RUN_ID": run_id, "PYTHONUNBUFFERED": "1"}
        if len(ranked) > 1:
            env.update({"RANK": str(rank), "WORLD_SIZE": str(len(ranked)), "LOCAL_RANK": str(peers.index(rank)),
                        "LOCAL_WORLD_SIZE": str(len(peers)), "GROUP_RANK": str(node_index[info.node_id]),
                        "MASTER_ADDR": ranked[0].host, "MASTER_PORT": str(master_port)})
            if info.interface:  # NCCL's "=": exactly this name, not every one it begins (eth1, eth10)
                env.update(GLOO_SOCKET_IFNAME=info.interface, NCCL_SOCKET_IFNAME=f"={info.interface}")
        # On GPUs: this node's job GPUs, in local-rank order, so cuda:LOCAL_RANK is this rank's
        # own; on the CPU none, so that a CPU job on a GPU node cannot take one by accident.
        gpus = [ranked[r].gpu_ids[0] for r in peers if ranked[r].gpu_ids] if device == "gpu" else []
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        envs.append(env)
    return envs


def worker_docs(ranked: list[WorkerInfo], device: str) -> list[dict]:
    """The job document's ``workers``: one entry per rank."""
    return [{"rank": rank, "node_id": info.node_id, "host": info.hostname or info.host, "ip": info.host,
             "device": gpu_resource(info.gpu_ids[0]) if device == "gpu" and info.gpu_ids else "cpu"}
            for rank, info in enumerate(ranked)]
