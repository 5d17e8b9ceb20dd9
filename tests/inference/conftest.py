"""Fixtures of the inference tests: an API client over the shared trained model's home.

The model itself is tests/conftest.py's session fixture ``trained``.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client(trained):
    """An API client over the trained model's home (no scheduler: nothing runs by itself)."""
    from fastapi.testclient import TestClient

    from trainyard.web.app import create_app

    with TestClient(create_app(trained.settings, run_scheduler=False)) as test_client:
        yield test_client
