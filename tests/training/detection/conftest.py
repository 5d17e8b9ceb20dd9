"""Fixtures of the detection training tests: the session's trained detector (tests/detection_model.py).

tests/training is put on the path so these tests use its helpers (model_helpers) as its own do.
"""

import sys
from pathlib import Path

import pytest

from tests.detection_model import trained_detector

sys.path.insert(0, str(Path(__file__).parent.parent))


@pytest.fixture(scope="session")
def detector(tmp_path_factory):
    return trained_detector(tmp_path_factory)
