"""Under CI a sandbox or namespace test may skip only where the machine truly lacks the feature."""

from __future__ import annotations

from pathlib import Path

from tests import expected_features

ROOT = Path("/suite/tests")


def test_a_skip_for_an_offered_feature_is_named(monkeypatch):
    monkeypatch.setitem(expected_features.FEATURES, "landlock", ("Landlock", lambda: True))
    assert expected_features.offered_but_skipped("this kernel has no Landlock") == "Landlock"


def test_a_skip_for_an_absent_feature_stays_a_skip(monkeypatch):
    monkeypatch.setitem(expected_features.FEATURES, "landlock", ("Landlock", lambda: False))
    assert expected_features.offered_but_skipped("this kernel has no Landlock") is None
    assert expected_features.offered_but_skipped("needs 2 CUDA devices") is None


def test_only_the_sandbox_and_cluster_folders_under_ci_are_checked(monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert expected_features.checked(ROOT / "sandbox" / "test_x.py", ROOT)
    assert expected_features.checked(ROOT / "cluster" / "test_y.py", ROOT)
    assert not expected_features.checked(ROOT / "training" / "test_z.py", ROOT)
    monkeypatch.delenv("CI")
    assert not expected_features.checked(ROOT / "sandbox" / "test_x.py", ROOT)
