"""The name a new version of a dataset gets when none is given (issue 31.9)."""

from __future__ import annotations

import pytest

from trainyard.jobs.kinds.dataset import version_name


@pytest.mark.parametrize("name, version, expected", [
    ("digits-web", 2, "digits-web v2"),
    ("digits-web v2", 2, "digits-web v3"),  # was "digits-web v2 v2"
    ("digits-web v9", 3, "digits-web v10"),
    ("v2", 2, "v2 v2"),  # a name that is only a version keeps it
    ("flowers vintage", 4, "flowers vintage v4"),
])
def test_a_new_version_counts_on_from_the_name(name, version, expected):
    assert version_name(name, version) == expected
