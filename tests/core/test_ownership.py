"""The one set of ownership rules that jobs and weights entries both answer with."""

from __future__ import annotations

import pytest

from trainyard.core.errors import InvalidInput
from trainyard.core.ownership import VISIBILITIES, Actor, changes, checked_visibility, sees

ADMIN, VERA = Actor("root", "admin"), Actor("vera", "viewer")
ALICE, BOB = Actor("alice", "member"), Actor("bob", "member")


@pytest.mark.parametrize("actor, visibility, holders, seen", [
    (ALICE, "private", ["alice"], True),
    (BOB, "private", ["alice"], False),
    (BOB, None, ["alice"], False),  # no visibility recorded: private
    (BOB, "private", ["alice", "bob"], True),  # a later user of a pulled weights entry
    (BOB, "team", ["alice"], True),
    (VERA, "team", ["alice"], True),
    (VERA, "private", ["vera"], False),  # a viewer holds nothing of its own
    (ADMIN, "private", ["alice"], True),
    (None, "private", ["alice"], True),  # the home's own process
    (BOB, "private", [None], False),  # an ownerless item is nobody's but the admins'
])
def test_who_sees_what(actor, visibility, holders, seen):
    assert sees(actor, visibility, holders) is seen


@pytest.mark.parametrize("actor, owner, changed", [
    (ALICE, "alice", True), (BOB, "alice", False), (VERA, "vera", False), (ADMIN, "alice", True),
    (None, "alice", True), (BOB, None, False),
])
def test_only_the_owner_or_an_admin_changes(actor, owner, changed):
    assert changes(actor, owner) is changed


def test_a_visibility_that_does_not_exist_is_refused_with_the_ones_that_do():
    assert [checked_visibility(v) for v in VISIBILITIES] == ["private", "team"]
    with pytest.raises(InvalidInput, match="private, team"):
        checked_visibility("public")
