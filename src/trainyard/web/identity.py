"""Who a request is: a bearer token or a session cookie turned into a user (jobs/accounts/).

The server's own token (TRAINYARD_AUTH_TOKEN, or the fresh one ``serve`` prints) is the first
admin's credential; personal tokens are their users'. A revoked token, a disabled user or a
user whose role is not one of the roles is no one: the request gets a 401 and changes nothing.
"""

from __future__ import annotations

from trainyard.core.ownership import Actor
from trainyard.jobs.accounts import users
from trainyard.jobs.store.account_tables import UserRow
from trainyard.jobs.store.store import Store


class Identities:
    def __init__(self, store: Store, server_token: str) -> None:
        self.store = store
        self.server_token = server_token

    def by_token(self, given: str) -> Actor | None:
        return users.resolve(self.store, given, self.server_token) if given else None

    def by_name(self, name: str) -> Actor | None:
        """The user a session cookie names, while they may still sign in."""
        with self.store.session() as s:
            return users.actor_of(s.get(UserRow, name))
