"""A rank's threads come from what it was granted, never from the host's core count."""

from __future__ import annotations

import pytest

from trainyard.core import rank_threads as rt
from trainyard.core.rank_threads import RANK_CPUS_ENV, rank_threads


@pytest.fixture
def granted(monkeypatch):
    """This process 'may use' 8 CPUs (affinity and quota), whatever the machine has."""
    monkeypatch.setattr(rt, "granted_cpus", lambda use_omp=True: 8)


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
