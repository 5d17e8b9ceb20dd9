"""The weights store's owners: a published entry one user pulled privately is absent to another,
whose own pull makes them one of its users (the file is kept once); their remove lets go of it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.weights.fixtures import HUB_PATH, TIMM_ENTRY
from trainyard.core.errors import Forbidden, InvalidInput, NotFound
from trainyard.weights.store import WeightsStore


@dataclass
class Members:
    """Access as the accounts give it to members (jobs/accounts/weights_access.py), one at a time."""

    name: str = "alice"

    def who(self) -> str | None:
        return self.name

    def owner_of(self, record: dict) -> str | None:
        return record.get("owner")

    def sees(self, record: dict) -> bool:
        return record.get("visibility") == "team" or self.name in [record.get("owner"), *record.get("users", [])]

    def changes(self, record: dict) -> bool:
        return record.get("owner") == self.name

    def check_create(self) -> None:
        return None


@pytest.fixture
def members(tmp_path, file_server, hub_file):
    file_server.files[HUB_PATH] = hub_file
    access = Members()
    return access, WeightsStore(tmp_path / "weights", access=access), file_server


def test_a_published_entry_pulled_privately_is_absent_to_another_until_they_pull_it(members):
    access, store, server = members
    row = store.pull(TIMM_ENTRY)
    assert (row["present"], row["owner"], row["visibility"]) == (True, "alice", "private")
    access.name = "bob"
    assert not store.resolve(TIMM_ENTRY)["present"] and store.list("test_resnet", present=True) == []
    with pytest.raises(NotFound):  # as if absent: not a 403 that tells it is there
        store.set_visibility(TIMM_ENTRY, "team")
    fetched = len(server.requests)
    assert store.pull(TIMM_ENTRY)["present"]  # his now too
    assert len(server.requests) == fetched  # no second download: the one copy is theirs both
    assert store.resolve(TIMM_ENTRY)["owner"] == "alice"
    with pytest.raises(Forbidden, match="only the owner"):  # a user of it, not its owner
        store.set_visibility(TIMM_ENTRY, "team")
    assert store.remove(TIMM_ENTRY)["present"] is False  # he lets go of it
    assert not store.resolve(TIMM_ENTRY)["present"]
    access.name = "alice"
    assert store.resolve(TIMM_ENTRY)["present"]  # still hers


def test_the_owner_removing_a_shared_pull_hands_it_to_the_next_user(members):
    access, store, _ = members
    store.pull(TIMM_ENTRY, visibility="private")
    access.name = "bob"
    store.pull(TIMM_ENTRY)
    access.name = "alice"
    store.remove(TIMM_ENTRY)
    assert not store.resolve(TIMM_ENTRY)["present"]
    access.name = "bob"
    assert store.resolve(TIMM_ENTRY)["owner"] == "bob"
    assert store.set_visibility(TIMM_ENTRY, "team")["visibility"] == "team"
    with pytest.raises(InvalidInput, match="visibility should be one of private, team"):
        store.set_visibility(TIMM_ENTRY, "public")
