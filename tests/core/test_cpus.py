"""The CPUs a process was granted: affinity, cgroup quota and OMP_NUM_THREADS, the smallest wins."""

from __future__ import annotations

import os

import pytest

from trainyard.core import cpus


def test_cgroup_v2_and_v1_quotas(tmp_path):
    (tmp_path / "cpu.max").write_text("250000 100000\n")
    assert cpus.cgroup_cpus(tmp_path) == 2.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpus.cgroup_cpus(tmp_path) is None
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000")
    assert cpus.cgroup_cpus(tmp_path) == 3.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    assert cpus.cgroup_cpus(tmp_path) is None


@pytest.mark.parametrize(("value", "expected"), [("4", 4), ("2,1", 2), ("0", None), ("x", None), ("", None)])
def test_omp_num_threads(value, expected):
    assert cpus.omp_cpus({"OMP_NUM_THREADS": value}) == expected


def test_the_smallest_grant_wins(monkeypatch):
    monkeypatch.setattr(cpus, "affinity_cpus", lambda: 16)
    monkeypatch.setattr(cpus, "cgroup_cpus", lambda: 3.5)
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    assert cpus.granted_cpus() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert cpus.granted_cpus() == 2
    assert cpus.granted_cpus(use_omp=False) == 3
    monkeypatch.setattr(cpus, "cgroup_cpus", lambda: 0.5)
    assert cpus.granted_cpus() == 1  # never below one


def test_affinity_is_this_process_s():
    assert cpus.affinity_cpus() == len(os.sched_getaffinity(0))
