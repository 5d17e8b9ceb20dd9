"""One object that holds settings, store and manager, shared by the CLI and the web app."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.jobs.runs.manager import JobManager
from trainyard.jobs.scheduling.resources import Pools, fake_gpus, gpu_inventory
from trainyard.jobs.store.store import Store
from trainyard.settings import Settings, get_settings


@dataclass
class Context:
    settings: Settings
    store: Store
    manager: JobManager

    @property
    def pools(self) -> Pools:
        return self.manager.pools


def open_context(settings: Settings | None = None, pools: Pools | None = None) -> Context:
    settings = settings or get_settings()
    settings.ensure_dirs()
    store = Store(settings.db_url)
    if pools is None:
        # TRAINYARD_FAKE_GPUS=N: pretend GPUs, so that tests without GPUs share one inventory
        # between the server and CLI processes.
        gpus = fake_gpus(settings.fake_gpus) if settings.fake_gpus else gpu_inventory  # looked up when asked
        pools = Pools(settings.dataset_builds, settings.cpu_jobs, gpus, settings.inference_jobs)
    return Context(settings, store, JobManager(settings, store, pools))
