"""A rank's threads come from what it was granted, never from the host's core count."""

from __future__ import annotations

import pytest

from trainyard.core import rank_threads as rt
from trainyard.core.rank_threads import RANK_CPUS_ENV, rank_threads


@pytest.fixture
def granted(monkeypatch):
    """This process 'may use' 8 CPUs (affinity and quota), whatever the machine has."""
    monkeypatch.setattr(rt, "granted_cpus", lambda use_omp=True: 8)
    monkeypatch.setattr(rt, "idle_cpus", lambda: None)  # a quiet machine


def test_local_ranks_share_the_granted_cpus(granted):
    assert rank_threads(1, {}) == 8
    assert rank_threads(2, {}) == 4
    assert rank_threads(3, {}) == 2
    assert rank_threads(16, {}) == 1


def test_ray_assigned_cpus_bound_a_cluster_rank(granted):
    # a node started with --num-cpus 1 on this 8-CPU host: one thread, not 8
    assert rank_threads(1, {RANK_CPUS_ENV: "1.0"}) == 1
    assert rank_threads(1, {RANK_CPUS_ENV: "3"}) == 3
    assert rank_threads(1, {RANK_CPUS_ENV: "32"}) == 8  # never past affinity / quota
    assert rank_threads(1, {RANK_CPUS_ENV: "0.5"}) == 1
    assert rank_threads(2, {RANK_CPUS_ENV: "2", "OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "x"}) == 1


def test_the_users_omp_num_threads_wins_where_set(granted):
    assert rank_threads(1, {"OMP_NUM_THREADS": "3"}) == 3
    assert rank_threads(2, {"OMP_NUM_THREADS": "3", "TORCHELASTIC_RUN_ID": "x"}) == 3
    assert rank_threads(1, {"OMP_NUM_THREADS": "64"}) == 8
    assert rank_threads(1, {RANK_CPUS_ENV: "4", "OMP_NUM_THREADS": "2"}) == 2


def test_torchruns_default_of_one_thread_is_not_the_users(granted):
    # torch.distributed.run sets OMP_NUM_THREADS=1 for a multi-process launch the user left unset
    assert rank_threads(2, {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "x"}) == 4
    assert rank_threads(1, {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "x"}) == 1


def test_the_real_grant_is_at_least_one():
    assert rank_threads(1000, {}) >= 1


def test_a_loaded_machine_gives_fewer_threads_and_the_log_says_why(granted, monkeypatch):
    # issue 46, point 3: 2 threads on a busy 2-core machine cost 8x the CPU per step
    monkeypatch.setattr(rt, "idle_cpus", lambda: 1)
    assert rank_threads(1, {}) == 1 and rank_threads(2, {}) == 1
    monkeypatch.setattr(rt, "idle_cpus", lambda: 5)
    assert rank_threads(1, {}) == 5
    assert rank_threads(1, {"OMP_NUM_THREADS": "3"}) == 3  # the user's choice stands
    monkeypatch.setattr(rt.os, "getloadavg", lambda: (6.5, 0.0, 0.0))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert rt.threads_note(1).startswith("1 CPU thread (8 CPU(s) granted, machine load 6.5 on ")


def test_idle_cpus_are_the_machines_less_its_load(monkeypatch):
    from trainyard.core import cpus

    monkeypatch.setattr(cpus.os, "cpu_count", lambda: 2)
    for load, idle in ((0.1, 2), (0.8, 1), (1.7, 1), (5.0, 1)):
        monkeypatch.setattr(cpus.os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert cpus.idle_cpus() == idle
