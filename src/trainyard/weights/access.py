"""Who may see and change which entries of the weights store: an interface the store asks.

Each stored entry records its ``owner`` (who imported or pulled it), its ``visibility``
(``private`` | ``team``) and, for a published entry, the other ``users`` who pulled it since (the
file is the library's, one copy for all). The rules of accounts are core/ownership.py's, applied
to the acting user above this layer (jobs/accounts/weights_access.py); the store only asks them
through `Access`.
Without accounts (`Everyone`) every entry is everyone's, as before.
"""

from __future__ import annotations

from typing import Protocol


class Access(Protocol):
    def who(self) -> str | None:
        """The acting user's name, stamped as a new entry's owner; None: the home's own."""

    def owner_of(self, record: dict) -> str | None:
        """The entry's owner as shown (an entry made before accounts: the first admin's)."""

    def sees(self, record: dict) -> bool:
        """Whether the acting user may see (list, show, train from) the stored entry."""

    def changes(self, record: dict) -> bool:
        """Whether the acting user may remove the entry or change its visibility."""

    def check_create(self) -> None:
        """Raise (403) when the acting user may add nothing (a viewer)."""


class Everyone:
    """No accounts: every entry is seen and changed by whoever asks."""

    def who(self) -> str | None:
        return None

    def owner_of(self, record: dict) -> str | None:
        return record.get("owner")

    def sees(self, record: dict) -> bool:
        return True

    def changes(self, record: dict) -> bool:
        return True

    def check_create(self) -> None:
        return None
