"""One registry mechanism for every user-facing set of names: networks, solvers, LR policies,
resize modes, job kinds.

A registry maps a stable name to a value (a builder, a factory, a plan function) and, where the
UI or CLI needs it, to metadata about that entry (a frozen dataclass such as NetworkInfo).
Names keep their registration order, so lists and drop-downs show them as registered. An
unknown name raises ``UnknownName`` (a ``NotFound``) whose one-line message suggests the
closest name and lists the valid ones, so every registry answers a typo the same way.
"""

from __future__ import annotations

import builtins
import difflib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar, overload

from trainyard.core.errors import NotFound

T = TypeVar("T")


class UnknownName(NotFound):
    """A name that is not registered; the message says the closest name and lists the valid ones."""

    def __init__(self, what: str, name: str, valid: builtins.list[str], plural: str = "names"):
        self.name = name
        self.valid = valid
        close = difflib.get_close_matches(str(name), valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        super().__init__(f"unknown {what} {name!r}; {hint}valid {plural}: {', '.join(valid)}")


class Registry(Generic[T]):
    """Names -> values (plus optional metadata), in registration order.

    ``what`` names the kind of entry in error messages ("network", "solver"); ``error`` is the
    UnknownName subclass to raise, so callers can keep catching their own exception type.
    """

    def __init__(self, what: str, *, error: type[UnknownName] = UnknownName, plural: str = "names"):
        self.what = what
        self._error = error
        self._plural = plural
        self._values: dict[str, T] = {}
        self._infos: dict[str, Any] = {}

    @overload
    def register(self, name: str, value: T, *, info: Any = None, replace: bool = False) -> T: ...

    @overload
    def register(self, name: str, *, info: Any = None, replace: bool = False) -> Callable[[T], T]: ...

    def register(self, name: str, value: Any = None, *, info: Any = None, replace: bool = False) -> Any:
        """Register `value` under `name`; without a value, return a decorator that does so.

        A second registration of a name is a mistake unless `replace` says it is meant (the
        entry then keeps its place in the order).
        """
        if value is None:
            return lambda decorated: self.register(name, decorated, info=info, replace=replace)
        if name in self._values and not replace:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._values[name] = value
        self._infos[name] = info
        return value

    def get(self, name: str) -> T:
        """The value registered as `name`; UnknownName (with a suggestion) if there is none."""
        try:
            return self._values[name]
        except (KeyError, TypeError):  # TypeError: an unhashable "name" from a JSON document
            raise self._error(self.what, name, self.names(), self._plural) from None

    def info(self, name: str) -> Any:
        """The metadata registered with `name` (None if it was registered without any)."""
        self.get(name)
        return self._infos[name]

    def infos(self) -> builtins.list[Any]:
        """Every entry's metadata, in registration order."""
        return list(self._infos.values())

    def names(self) -> builtins.list[str]:
        """Every registered name, in registration order."""
        return list(self._values)

    def list(self) -> builtins.list[T]:
        """Every registered value, in registration order."""
        return list(self._values.values())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __len__(self) -> int:
        return len(self._values)
