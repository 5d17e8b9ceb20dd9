"""A resume's launcher removes the placement groups an earlier launch of the job left (with their
actors), and never asks for a name still taken."""

from __future__ import annotations

from tests.conftest import wait_for
from trainyard.cluster.connect import connect
from trainyard.cluster.previous_runs import job_of, launch_token, prefix, remove_previous


def test_an_earlier_launchs_placement_group_is_removed_and_ours_and_other_jobs_kept(ray_cluster):
    ray = connect()
    from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group

    old, ours = launch_token(), launch_token()
    assert old != ours
    left = placement_group([{"CPU": 1.0}], name=f"{prefix('jobA')}0-{old}")
    mine = placement_group([{"CPU": 1.0}], name=f"{prefix('jobA')}0-{ours}")
    other = placement_group([{"CPU": 1.0}], name=f"{prefix('jobB')}0-{old}")
    try:
        assert ray.wait([left.ready()], timeout=60)[0]
        assert remove_previous("jobA", ours) == [f"{prefix('jobA')}0-{old}"]
        states = lambda: {e["name"]: e["state"] for e in placement_group_table().values()}  # noqa: E731
        assert wait_for(lambda: states()[f"{prefix('jobA')}0-{old}"] == "REMOVED", 30), states()
        assert states()[f"{prefix('jobA')}0-{ours}"] != "REMOVED"
        assert states()[f"{prefix('jobB')}0-{old}"] != "REMOVED"
        assert remove_previous("jobA", ours) == []  # already removed: nothing more
    finally:
        for pg in (mine, other):
            remove_placement_group(pg)


def test_the_job_id_is_read_back_from_a_placement_group_name():
    assert job_of(f"{prefix('ab12cd')}0-{launch_token()}") == "ab12cd"
    assert job_of(f"{prefix('a-b')}3-{launch_token()}") == "a-b"
