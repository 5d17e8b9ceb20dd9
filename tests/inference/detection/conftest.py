"""Fixtures of the detection inference tests: the session's trained detector and an API client."""

from __future__ import annotations

import pytest

from tests.detection_model import trained_detector


@pytest.fixture(scope="session")
def detector(tmp_path_factory):
    return trained_detector(tmp_path_factory)


@pytest.fixture(scope="module")
def detector_client(detector):
    """An API client over the detector's home (no scheduler: nothing runs by itself)."""
    from fastapi.testclient import TestClient

    from trainyard.web.app import create_app

    with TestClient(create_app(detector.settings, run_scheduler=False)) as client:
        yield client
