"""Who an entry of the weights store belongs to: stamping a new one, a second user of a
published one, letting go of one, and the check before a change.

A stored entry records ``owner``, ``visibility`` (private | team) and, for a published entry
(the library's file, kept once), the later ``users`` who pulled it too. The store's ``access``
(weights/access.py) says what the acting user may see and change.
"""

from __future__ import annotations

from typing import Protocol

from trainyard.core.errors import Forbidden, NotFound
from trainyard.weights.access import Access


class WeightsStore(Protocol):
    """What of the store (weights/store.py) these read and write."""

    access: Access

    def stored(self, name: str) -> dict | None: ...

    def record(self, name: str) -> dict | None: ...

    def write_record(self, name: str, record: dict) -> None: ...


def stamp(store: WeightsStore, name: str, visibility: str | None, owner: str | None = None) -> dict:
    """The owner, visibility and users a new or replaced entry records: a replaced one keeps
    its owner and users, and its visibility unless a new one is given."""
    prior = store.stored(name) or {}
    return {"owner": prior.get("owner") or owner or store.access.who(),
            "visibility": visibility or prior.get("visibility") or "private", "users": prior.get("users", [])}


def hold(store: WeightsStore, name: str, user: str | None) -> None:
    """Make ``user`` one of the users of a stored published entry (a pull of it made again)."""
    stored = store.stored(name)
    if stored is None or user is None or user == store.access.owner_of(stored) or user in stored.get("users", []):
        return
    store.write_record(name, {**stored, "users": [*stored.get("users", []), user]})


def changeable(store: WeightsStore, name: str) -> dict:
    """The entry's record when the acting user may change it: NotFound when they do not see it
    (as if absent), Forbidden when they see it but it is not theirs."""
    stored = store.record(name)
    if stored is None:
        raise NotFound(f"the weights {name} are not in the store")
    if not store.access.changes(stored):
        raise Forbidden(f"only the owner of the weights {name} or an admin can change them")
    return stored


def let_go(store: WeightsStore, name: str) -> bool:
    """The acting user's remove of ``name``, where its files stay: a later user of a published
    entry lets go of it, and its owner hands it to the next user. False: remove the files."""
    stored = store.record(name)
    me, users = store.access.who(), (stored or {}).get("users", [])
    if stored is not None and me in users and not store.access.changes(stored):
        store.write_record(name, {**stored, "users": [u for u in users if u != me]})
        return True
    stored = changeable(store, name)
    if users and me == store.access.owner_of(stored):  # still someone's: the next user's now
        store.write_record(name, {**stored, "owner": users[0], "users": users[1:]})
        return True
    return False
