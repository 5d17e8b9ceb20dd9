"""Plain Python conversion of the CLI's str, int, float, bool and Path values (issue 22).

Typer (0.2x and later) converts every command-line value through a pydantic TypeAdapter that it
builds the first time the value is parsed: importing pydantic and building one adapter per
option cost every command, ``--help`` and a mistyped command included, more than importing typer
and rich does. Our commands take only plain values, which ``int("3")`` converts as well; those
parameters get the converter here, and so do int and float options with a ``min``/``max`` (checked
with click's message). Anything else (choices, clamped ranges, files, dates, a typer without
this hook) keeps typer's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

import typer
import typer.core
from typer import BadParameter

PLAIN: dict[Any, str] = {str: "text", int: "integer", float: "number", bool: "boolean", Path: "path"}
TRUE, FALSE = {"1", "true", "t", "yes", "y", "on"}, {"0", "false", "f", "no", "n", "off"}


class PlainValue:
    """Converts one parameter's value(s) to ``kind``, as typer's runtime parameter does."""

    def __init__(self, kind: type, many: bool, low: float | None = None, high: float | None = None):
        self.kind, self.many = kind, many
        self.low, self.high = low, high  # an int or float option's range, inclusive

    def coerce(self, value: Any, param, ctx) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        if multi and isinstance(value, str):
            raise BadParameter("Value must be an iterable.", ctx=ctx, param=param)
        if self.many or multi:
            return [self._one(v, param, ctx) for v in value]
        return self._one(value, param, ctx)

    def _one(self, value: Any, param, ctx) -> Any:
        if isinstance(value, self.kind) and not (self.kind is int and isinstance(value, bool)):
            converted: Any = value
        else:
            try:
                converted = _boolean(str(value)) if self.kind is bool else self.kind(value)
            except (TypeError, ValueError):
                raise BadParameter(f"{value!r} is not a valid {PLAIN[self.kind]}.", ctx=ctx, param=param) from None
        if (self.low is not None and converted < self.low) or (self.high is not None and converted > self.high):
            raise BadParameter(f"{converted} is not in the range {_range(self.low, self.high)}.", ctx=ctx, param=param)
        return converted


def _range(low: float | None, high: float | None) -> str:
    """click's spelling of an inclusive range: ``1<=x<=100``, ``x>=0``, ``x<=5``."""
    if low is None:
        return f"x<={high}"
    return f"x>={low}" if high is None else f"{low}<=x<={high}"


def _boolean(text: str) -> bool:
    if text.lower() in TRUE:
        return True
    if text.lower() in FALSE:
        return False
    raise ValueError(text)


def plain_value(param) -> PlainValue | None:
    """The plain converter for ``param``, or None where typer's own is needed."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None or desc.is_choice or desc.is_file or desc.is_datetime:
        return None
    info = desc.parameter_info
    if getattr(info, "exists", False) or getattr(info, "resolve_path", False):
        return None  # Path checks typer makes: not used by our commands, so left to typer
    annotation, many = desc.annotation, False
    if get_origin(annotation) is list and len(get_args(annotation)) == 1:
        annotation, many = get_args(annotation)[0], True
    if annotation not in PLAIN:
        return None
    if not desc.is_ranged:
        return PlainValue(annotation, many)
    if annotation not in (int, float) or getattr(info, "clamp", False):
        return None  # clamping, or a range over another type: typer's own
    return PlainValue(annotation, many, getattr(info, "min", None), getattr(info, "max", None))


def install() -> None:
    """Give typer's parameters the plain converter where it fits (once per process)."""
    param_class = getattr(typer.core, "_TyperParameter", None)
    typers_own = getattr(param_class, "get_runtime_param", None)
    if param_class is None or typers_own is None or getattr(typers_own, "__module__", None) == __name__:
        return  # a typer that converts with click's types (no pydantic), or installed already (ours)

    def get_runtime_param(self):
        if self._runtime_param is None:
            self._runtime_param = plain_value(self) or typers_own(self)
        return self._runtime_param

    param_class.get_runtime_param = get_runtime_param
