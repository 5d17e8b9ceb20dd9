"""A weights store entry as the API answers it and ``trainyard weights ... --json`` prints it.

The store describes its entries (weights/store.py ``describe``); routes and commands make this
model of that row, every field named and typed, no other allowed (core/document.py), so the API
and the CLI print the same document for the same entry.
"""

from __future__ import annotations

from trainyard.core.document import Document, Number, where_given


class PullState(Document):
    """A background pull of a published entry (weights/pulls.py)."""

    state: str  # running, done or failed
    done: int  # bytes
    total: int | None
    error: str | None
    started: Number


class Dropped(Document):
    count: int
    names: list[str]  # the first few


class WeightsRow(Document):
    """A store entry (weights/store.py ``describe``: weights/catalogue.py's WeightsEntry, or the
    user's own entry.json), with its pull's state where one is asked."""

    name: str
    network: str
    source: str  # torchvision, timm or user
    filename: str
    url: str | None = None
    sha256: str | None = None
    size_mb: Number | None = None
    accuracy: dict[str, Number]
    num_classes: int
    input_size: list[int]  # channels, height, width
    mean: list[float] | None = None  # per channel, 0..1 units; None: the user gave none
    std: list[float] | None = None
    aliases: list[str] = []
    present: bool
    path: str | None
    verified: bool | None = where_given()  # False: its source gave no hash to check
    origin: str | None = where_given()  # the user's own: where it came from
    dropped: Dropped | None = where_given()  # the user's own: tensors left out of the store
    owner: str | None = None  # who imported or pulled it; None: not in the store
    visibility: str | None = None  # private | team; None: not in the store
    # Whether the acting user may change its visibility (its owner or an admin); None: not in the store
    changeable: bool | None = None
    pull: PullState | None = None
