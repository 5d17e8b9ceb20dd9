"""What the cluster launcher reads from a model job's spec.json: one typed view, read once.

cluster/ imports only core (the ranks run training's entry point as a process), so it cannot
use training's ModelSpec; `LaunchSpec` holds the few fields the launcher and its attempts use,
read tolerantly (core/stored.py): a spec an older trainyard wrote loads, a field it lacks (or
holds as null) at its default, and everything else in it is the training's business.
"""

from __future__ import annotations

import os

from trainyard.core.errors import InvalidInput
from trainyard.core.files import read_json
from trainyard.core.stored import SpecView, read_stored


class ClusterRequest(SpecView):
    """The spec's ``cluster``: how many ranks Ray places, each on one GPU or one CPU core."""

    workers: int = 1
    device: str = "cpu"  # "cpu" | "gpu"


class LaunchSpec(SpecView):
    """The job's id (names its placement group and actors), its dataset folder (every node must
    read it), how often a lost worker or node may restart it, and what it asks Ray for."""

    id: str | None = None
    dataset_dir: str | None = None  # every model job has one (read_launch_spec checks)
    max_restarts: int = 0
    min_workers: int | None = None  # elastic: down to this many workers (cluster/elastic.py)
    cluster: ClusterRequest = ClusterRequest()

    @property
    def run_id(self) -> str:
        """The ranks' TORCHELASTIC_RUN_ID: the job's id, or "job" for a spec without one."""
        return self.id or "job"


def read_launch_spec(path: str | os.PathLike) -> LaunchSpec:
    """The launcher's view of the spec.json at ``path``; InvalidInput when it is not a model
    spec, or names no dataset (the ranks train on it, and each node checks it can read it)."""
    spec = read_stored(LaunchSpec, read_json(path), what=f"model spec {path}")
    if spec.dataset_dir is None:
        raise InvalidInput(f"model spec {path} names no dataset_dir: a cluster job trains on a dataset")
    return spec
