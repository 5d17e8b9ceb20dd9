"""Fixtures of the web tests: an app whose scheduler is off and a client for it, for tests that
write jobs into the store themselves and read them back through the API, the pages or the CLI
(nothing ever runs). Named apart from the suite's ``client``, which runs jobs."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from trainyard.jobs.resources import Pools
from trainyard.web.app import create_app


@pytest.fixture
def idle_app(settings):
    return create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)


@pytest.fixture
def idle_client(idle_app):
    with TestClient(idle_app) as client:
        yield client
