"""Fixtures of the inference tests: the shared trained model, and a loaded copy of it."""

from __future__ import annotations

import pytest

from tests.inference.trained import trained_model


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    return trained_model(tmp_path_factory)
