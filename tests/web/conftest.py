"""Fixtures for the API tests: an app over the test's temporary home with no scheduler (the
tests drive jobs themselves), and a client on it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from trainyard.jobs.resources import Pools
from trainyard.web.app import create_app


@pytest.fixture
def app(settings):
    return create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)


@pytest.fixture
def client(app):
    with TestClient(app) as client:
        yield client
