"""One object that holds settings, store and manager, shared by the CLI and the web app."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.jobs.manager import JobManager
from trainyard.jobs.resources import Pools, gpu_inventory
from trainyard.jobs.store import Store
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
    pools = pools or Pools(settings.dataset_builds, settings.cpu_jobs, gpu_inventory())
    return Context(settings, store, JobManager(settings, store, pools))
