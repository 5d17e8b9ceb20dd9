"""The base of every JSON answer: a pydantic model whose every field is named, and no other.

Builders in any layer (the job documents in jobs/, the web routes' own answers in web/schemas/)
construct these directly, so an answer is typed where it is made: the API serves it as it is, the
CLI's --json prints the same model's JSON (``as_json``), and a builder that gains a field fails
until the field is described (``extra="forbid"``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Number = int | float  # an epoch 3 stays 3 (a plain float would make it 3.0)
Point = list[Number]  # [x, y], e.g. [epoch, value]


class Document(BaseModel):
    """An answer whose every field is named here: any other is refused (a 500 in the tests)."""

    model_config = ConfigDict(extra="forbid")

    def as_json(self) -> Any:
        """The document as the API serves it (by alias: ``class``, not ``class_``), for the CLI."""
        return self.model_dump(mode="json", by_alias=True)


def where_given() -> Any:
    """A field its builder leaves out where it does not apply (a detector's figures on a
    classifier's dataset, a layer table not asked for): left out of the answer then, as before."""
    return Field(None, exclude_if=lambda value: value is None)
