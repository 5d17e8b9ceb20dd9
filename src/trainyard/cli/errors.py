"""The one place the CLI turns a user's mistake into exit code 2 and one line on stderr.

Commands let a ``UserError`` (any kind) or a pydantic ``ValidationError`` escape; the command
group that every ``trainyard`` command runs under catches them here. Anything else that escapes
is a defect and keeps its traceback.

Nothing here is imported before it is needed: ``trainyard --help`` and every refusal that needs
no computation must not pay for pydantic or rich's console (issue 22).
"""

from __future__ import annotations

import sys

from typer.core import TyperGroup

from trainyard.core.errors import UserError

USAGE = 2  # the exit code of a mistake the user can fix, like click's usage errors


def user_message(exc: BaseException) -> str | None:
    """The one line to show for a user's mistake, or None for a defect."""
    if isinstance(exc, UserError):
        return str(exc)
    if "pydantic_core" in sys.modules:  # a process that never loaded pydantic raised none of its errors
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            from trainyard.core.errors import validation_message

            return validation_message(exc)
    return None


class UserErrorGroup(TyperGroup):
    """A command group whose commands' UserErrors end the program with exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Exception as exc:
            message = user_message(exc)
            if message is None:
                raise
            from trainyard.cli.output import fail

            fail(message, USAGE)
