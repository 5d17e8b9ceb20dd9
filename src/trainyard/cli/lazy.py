"""A command group that imports a command's module only when that command runs (issue 22).

Importing every command module at start-up made ``trainyard --help`` and a mistyped command
cost the imports of SQLAlchemy, pydantic and the job store: seconds on a loaded machine, for a
line of text. Here the top-level group knows each command by name and short help (what
``--help`` lists) and the module and attribute that hold it; the module is imported when the
command is resolved, i.e. when it runs or shows its own ``--help``.

Help is click's plain formatter (``rich_markup_mode=None`` everywhere): typer's rich help
imports rich's markdown and syntax modules, twice the time of importing typer and rich, and
its tables cut long option names at 80 columns.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer
from typer.core import TyperCommand

if TYPE_CHECKING:
    from typer._click import Command

from trainyard.cli import plain_params
from trainyard.cli.errors import UserErrorGroup

plain_params.install()


@dataclass(frozen=True)
class Lazy:
    """Where a command lives: ``module.attr`` is a typer.Typer (a group) or a command function."""

    module: str
    attr: str
    help: str  # the short help --help lists; tests/cli/test_cli_lazy.py keeps it equal to the command's

    def load(self, name: str) -> Command:
        target = getattr(importlib.import_module(self.module), self.attr)
        if isinstance(target, typer.Typer):
            group = typer.main.get_group(target)
            group.name = name
            return group
        holder = typer.Typer(rich_markup_mode=None)
        holder.command(name)(target)
        return typer.main.get_group(holder).commands[name]


class Pending(TyperCommand):
    """What the group holds for a command not imported yet: enough for listing it in --help."""

    def __init__(self, name: str, lazy: Lazy):
        super().__init__(name, short_help=lazy.help, rich_markup_mode=None)
        self.lazy = lazy


class LazyGroup(UserErrorGroup):
    """The ``trainyard`` group: subclasses set ``lazy`` (name -> Lazy), in the order --help lists."""

    lazy: dict[str, Lazy] = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        eager = dict(self.commands)
        self.commands = {name: Pending(name, lazy) for name, lazy in self.lazy.items()}
        self.commands.update(eager)  # commands defined in main.py itself (serve) come last

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, Pending) and name is not None:
            command = self.commands[name] = command.lazy.load(name)
        return name, command, rest

    def loaded(self, name: str) -> Command:
        """The command ``name`` itself, imported if it was not (for tests and tools)."""
        command = self.commands[name]
        if isinstance(command, Pending):
            command = self.commands[name] = command.lazy.load(name)
        return command
