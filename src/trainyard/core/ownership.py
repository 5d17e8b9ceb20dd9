"""Who acts, and what a user may see and change of an owned item: the one set of rules.

Every item a user makes (a dataset, a model, any job; a weights entry) has an owner and a
visibility. The jobs' store (jobs/store/actor.py) and the weights store's accounts
(jobs/accounts/weights_access.py) both answer with `sees` and `changes` below; only the SQL form
of `sees` for listing jobs (actor.py `visible_condition`) restates it, as a WHERE clause.

- admin: everything. member: its own and team items; changes its own only.
  viewer: team items, read only; creates nothing.
- No acting user (``None``: the CLI on its own home, the scheduler): everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from trainyard.core.errors import InvalidInput

ROLES = ("admin", "member", "viewer")
Visibility = Literal["private", "team"]  # the type request bodies and forms declare
VISIBILITIES: tuple[str, ...] = get_args(Visibility)


@dataclass(frozen=True)
class Actor:
    name: str
    role: str
    source: str | None = None  # the client's address, for the audit log

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def checked_visibility(value: Any) -> str:
    """``value`` when it is a visibility; InvalidInput (422) says which are."""
    if value not in VISIBILITIES:
        raise InvalidInput(f"visibility should be one of {', '.join(VISIBILITIES)}, not {value!r}")
    return value


def sees(actor: Actor | None, visibility: str | None, holders: Iterable[str | None]) -> bool:
    """Whether ``actor`` may see an item of ``visibility`` (None: private) held by ``holders``
    (its owner, and for a weights entry the other users who pulled it)."""
    if actor is None or actor.is_admin or visibility == "team":
        return True
    return actor.role != "viewer" and actor.name in [holder for holder in holders if holder is not None]


def changes(actor: Actor | None, owner: str | None) -> bool:
    """Whether ``actor`` may change (abort, delete, patch, remove) an item ``owner`` owns."""
    if actor is None or actor.is_admin:
        return True
    return actor.role == "member" and owner is not None and actor.name == owner
