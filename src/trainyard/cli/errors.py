"""The one place the CLI turns a user's mistake into exit code 2 and one line on stderr.

Commands let a ``UserError`` (any kind) or a pydantic ``ValidationError`` escape; the command
group that every ``trainyard`` command runs under catches them here. Anything else that escapes
is a defect and keeps its traceback.
"""

from __future__ import annotations

from pydantic import ValidationError
from typer.core import TyperGroup

from trainyard.cli.output import fail
from trainyard.core.errors import UserError, validation_message

USAGE = 2  # the exit code of a mistake the user can fix, like click's usage errors


class UserErrorGroup(TyperGroup):
    """A command group whose commands' UserErrors end the program with exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as exc:
            fail(str(exc), USAGE)
        except ValidationError as exc:
            fail(validation_message(exc), USAGE)
