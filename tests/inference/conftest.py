"""Fixtures of the inference tests: the shared trained models, and an API client of the deploy one."""

from __future__ import annotations

import pytest

from tests.inference.deploy_helpers import trained_model as deploy_model
from tests.inference.trained import trained_model


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    return trained_model(tmp_path_factory)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """The 3-class half_crop model the export and import tests download and unpack."""
    return deploy_model(tmp_path_factory)


@pytest.fixture(scope="module")
def client(deployed):
    """An API client over the deploy model's home (no scheduler: nothing runs by itself)."""
    from fastapi.testclient import TestClient

    from trainyard.web.app import create_app

    with TestClient(create_app(deployed.settings, run_scheduler=False)) as test_client:
        yield test_client
