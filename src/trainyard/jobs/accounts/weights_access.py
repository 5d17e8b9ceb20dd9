"""The accounts' rules for the weights store (weights/access.py asks them): core/ownership.py's,
the same as for jobs.

Another user's private entry is as if absent (404, or a published entry "not in the store");
team entries are everyone's to read and train from; only the owner or an admin removes one or
changes its visibility. An entry stored before accounts (no owner) is the first admin's, private,
as jobs are. A member who pulls a published entry someone else holds privately becomes one of its
``users``: it is theirs to see from then on, and their remove only lets go of it.
"""

from __future__ import annotations

from functools import cached_property

from trainyard.core import ownership
from trainyard.jobs.accounts.users import first_admin
from trainyard.jobs.store import actor as accounts
from trainyard.jobs.store.store import Store


class ActorAccess:
    """`Access` for the acting user of this context (jobs/store/actor.py)."""

    def __init__(self, store: Store):
        self._store = store

    @cached_property
    def _first_admin(self) -> str | None:
        row = first_admin(self._store)
        return row.name if row is not None else None

    def who(self) -> str | None:
        actor = accounts.current()
        return actor.name if actor is not None else self._first_admin

    def owner_of(self, record: dict) -> str | None:
        return record.get("owner") or self._first_admin

    def sees(self, record: dict) -> bool:
        holders = [self.owner_of(record), *record.get("users", [])]
        return ownership.sees(accounts.current(), record.get("visibility"), holders)

    def changes(self, record: dict) -> bool:
        return ownership.changes(accounts.current(), self.owner_of(record))

    def check_create(self) -> None:
        accounts.check_create()
