"""``trainyard login`` and ``trainyard logout``: the CLI as one user of a shared server's home.

``login`` checks a personal API token (``trainyard users token NAME``) against this home's
users and keeps it in ``TRAINYARD_HOME/cli-token`` (0600, core/server_token.py): from then on
commands act as that user (cli/context.py: their rights, their jobs, the visibility rules) and
send that token to the server (cli/remote.py). ``logout`` removes it: commands then act as the
home's first admin again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from trainyard.cli.output import err

if TYPE_CHECKING:
    from trainyard.core.ownership import Actor
    from trainyard.jobs.context import Context


def logged_in(ctx: Context) -> Actor | None:
    """The user of the kept token; a UserError when it names no one any more."""
    from trainyard.core import server_token
    from trainyard.core.errors import UserError
    from trainyard.jobs.accounts import users

    token = server_token.read(ctx.settings.home, server_token.LOGIN_FILE_NAME)
    if token is None:
        return None
    who = users.resolve(ctx.store, token, "")
    if who is None:
        raise UserError("the token of `trainyard login` names no one now (revoked, or its user disabled): "
                        "run `trainyard login` with a new one, or `trainyard logout`")
    return who


def login(token: str = typer.Option(..., prompt="API token", hide_input=True,
                                    help="a personal API token (trainyard users token NAME)")) -> None:
    """Act as the user of a personal API token in every later command."""
    from trainyard.core import server_token
    from trainyard.core.errors import UserError
    from trainyard.jobs.accounts import users
    from trainyard.jobs.store.store import Store
    from trainyard.settings import get_settings

    settings = get_settings()
    who = users.resolve(Store(settings.db_url), token.strip(), "")
    if who is None:
        raise UserError("that token names no user of this home (wrong, revoked, or its user disabled)")
    server_token.write(settings.home, token.strip(), server_token.LOGIN_FILE_NAME)
    err.print(f"logged in as {who.name} ({who.role})")


def logout() -> None:
    """Forget the token of `trainyard login`."""
    from trainyard.core import server_token
    from trainyard.settings import get_settings

    server_token.token_file(get_settings().home, server_token.LOGIN_FILE_NAME).unlink(missing_ok=True)
    err.print("logged out: commands act as this home's admin")
