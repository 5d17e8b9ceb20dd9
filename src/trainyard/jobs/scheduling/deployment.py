"""Where jobs run is the deployment's choice, not the client's (issue 19 item 5).

A server records its backend (``local``, or ``ray`` with TRAINYARD_CLUSTER=ray) in the store when
it starts. A CLI command that creates training jobs follows what the store says, whatever its own
shell's environment: a job it queues for a cluster-mode server (``train --submit``) asks for
cluster workers, and a foreground ``trainyard train`` against such a store joins the cluster too,
or, when Ray is not installed or RAY_ADDRESS does not answer here, is refused with the reason
(never a silent local run). Its own TRAINYARD_CLUSTER=ray is never overridden by the store.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import time

from sqlalchemy.exc import DBAPIError, IntegrityError

from trainyard.core import environment
from trainyard.core.errors import InvalidInput
from trainyard.jobs.context import Context
from trainyard.jobs.store.liveness_tables import DeploymentSetting
from trainyard.jobs.store.store import Store
from trainyard.settings import Settings

log = logging.getLogger(__name__)
BACKEND = "backend"
HOW_TO_QUEUE = "or queue the job for the server with --submit"


class ClusterNotReachable(InvalidInput):
    """A foreground training against a cluster-mode store, from where the cluster cannot be
    joined (CLI exit 2)."""


def record_backend(store: Store, backend: str) -> None:
    """Record the backend of the server starting now (the last server started decides).

    Only written when it changes, and a failed write is logged, not raised: a server on a
    read-only store still starts (and its requests say what is wrong)."""
    who = f"{socket.gethostname()} pid {os.getpid()}"
    try:
        for _ in range(2):  # an insert that lost a race with another server's becomes an update
            with store.session.begin() as s:
                row = s.get(DeploymentSetting, BACKEND)
                if row is not None:
                    if row.value != backend:
                        row.value, row.set_by, row.updated_at = backend, who, time.time()
                    return
            try:
                with store.session.begin() as s:
                    s.add(DeploymentSetting(key=BACKEND, value=backend, set_by=who, updated_at=time.time()))
                return
            except IntegrityError:
                continue
    except DBAPIError as exc:
        log.warning("could not record this server's backend (%s) in the store: %s", backend, exc)


def recorded_backend(store: Store) -> str | None:
    """The backend the store's server recorded; None if no server has started on it yet."""
    with store.session() as s:
        row = s.get(DeploymentSetting, BACKEND)
        return row.value if row is not None else None


def job_settings(settings: Settings, store: Store) -> Settings:
    """``settings`` for creating jobs in ``store``: in cluster mode if its server is."""
    if settings.cluster == "local" and recorded_backend(store) == "ray":
        return settings.model_copy(update={"cluster": "ray"})
    return settings


def follow_deployment(ctx: Context, foreground: bool) -> None:
    """Put ``ctx`` in cluster mode if the store's server is (a CLI command creating training
    jobs); a foreground job must then be able to join the cluster from here."""
    settings = job_settings(ctx.settings, ctx.store)
    if settings is not ctx.settings:
        if foreground:
            check_cluster_reachable()
        ctx.settings = settings


def check_cluster_reachable() -> None:
    """For a foreground job in cluster mode: refuse, with the reason, when this process cannot
    join the Ray cluster (only when cluster mode came from the store: a shell that sets
    TRAINYARD_CLUSTER=ray itself learns the same from the job's launcher)."""
    from trainyard.cluster.connect import ClusterUnavailable, address, probe  # plain sockets; no ray

    where = "this store's server trains on its Ray cluster (TRAINYARD_CLUSTER=ray)"
    if importlib.util.find_spec("ray") is None:
        raise ClusterNotReachable(f"{where}, but ray is not installed here: install trainyard[cluster] "
                                  f"to train on the cluster from here, {HOW_TO_QUEUE}")
    if not environment.ray_address():
        raise ClusterNotReachable(f"{where}, but RAY_ADDRESS is not set here: set it to the head's "
                                  f"HOST:PORT to train on the cluster from here, {HOW_TO_QUEUE}")
    try:
        probe(address())
    except ClusterUnavailable as exc:
        reason = str(exc).split(";")[0]
        raise ClusterNotReachable(f"{where}, but from here {reason}: set RAY_ADDRESS to the head's "
                                  f"HOST:PORT, {HOW_TO_QUEUE}") from None


def default_cluster_device() -> str:
    """The device of a cluster job that asks for none: a GPU if the cluster has any. A client
    that cannot ask (no ray here, no RAY_ADDRESS) says the CPU; ``--gpus N`` asks for GPUs."""
    if importlib.util.find_spec("ray") is None:
        return "cpu"
    from trainyard.cluster.nodes import cluster_has_gpus  # ray, lazily: cluster mode only

    return "gpu" if cluster_has_gpus() else "cpu"
