"""Fixtures of the web tests: a client of an app whose scheduler is off, and that app, for tests
that write jobs into the store themselves and read them back through the API, the pages or the
CLI (nothing ever runs). Named apart from the suite's ``client``, which runs jobs."""

from __future__ import annotations

import pytest

from tests.conftest import open_client


@pytest.fixture
def idle_client(settings):
    with open_client(settings, run_scheduler=False) as client:
        yield client


@pytest.fixture
def idle_app(idle_client):
    return idle_client.app
