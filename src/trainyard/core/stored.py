"""Specs read back from a job folder: strict when a job is made, tolerant when a stored one is read.

A job's spec.json is validated strictly when the job is created and by the job's own process
(unknown fields refused, every rule checked). Everything else (the manager, the pages, the
inference code) reads a stored spec back with ``read_stored``: a spec written by an older
trainyard still loads, its fields since removed dropped, its fields added since at their
defaults, and rules added since not applied to it (it was valid when it was written).

Spec classes derive from ``SpecModel``; a validator that checks a rule rather than a type asks
``is_stored(info)`` and lets a stored spec through. A process that cannot import a kind's spec
class (the cluster launcher imports only core) reads the few fields it needs as a ``SpecView``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from trainyard.core.errors import InvalidInput, validation_message

STORED = "stored"  # the validation context key that marks a stored spec being read back

S = TypeVar("S", bound="SpecModel")


def is_stored(info: ValidationInfo) -> bool:
    """True while a stored spec is read back (``read_stored``), not while a new one is checked."""
    return bool(info.context and info.context.get(STORED))


class SpecModel(BaseModel):
    """A job spec, or a part of one: refuses unknown fields when made, drops them when read back."""

    @model_validator(mode="before")
    @classmethod
    def _drop_old_fields(cls, data: Any, info: ValidationInfo) -> Any:
        # Fields a newer trainyard removed: a stored spec keeps them, this one has no use for them.
        if is_stored(info) and isinstance(data, dict):
            known = set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}
            return {key: value for key, value in data.items() if key in known}
        return data


class SpecView(SpecModel):
    """The fields of a stored spec that one reader needs, the rest ignored: for code that may not
    import the kind's spec class. A field missing, null or empty reads as its default, as
    reading it with ``get(key) or default`` did before there were views."""

    model_config = ConfigDict(frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _unset_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        if value or info.field_name is None:
            return value
        return cls.model_fields[info.field_name].get_default(call_default_factory=True)


def read_stored(model: type[S], data: Any, *, what: str = "stored spec") -> S:
    """``data`` (a spec.json's content) as ``model``, tolerant as the module says; InvalidInput
    (one line) when it is not a spec of that kind at all (another kind's, a wrong type)."""
    try:
        return model.model_validate(data, context={STORED: True})
    except ValidationError as exc:
        raise InvalidInput(f"{what}: {validation_message(exc)}") from None
