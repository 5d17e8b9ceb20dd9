"""Fixtures for the dataset tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainyard.core.events import EventWriter


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def events(tmp_path: Path):
    with EventWriter(tmp_path / "job") as writer:
        yield writer
