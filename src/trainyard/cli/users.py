"""``trainyard users add | list | disable | set-role | set-quota | token | revoke``: the server's accounts.

Run on the server's machine with its home (the store holds the users): whoever can write the
home is its admin already. ``add --json`` and ``token --json`` print the user with a new personal
API token in ``token``, shown this once (only its hash is kept).
"""

from __future__ import annotations

import typer

from trainyard.cli.output import emit_json, err

app = typer.Typer(help="Accounts: add, list, disable, set-role, token, revoke.", no_args_is_help=True,
                  rich_markup_mode=None)

ROLE_HELP = "admin | member | viewer"


def _store():
    from trainyard.jobs.store.store import Store
    from trainyard.settings import get_settings

    return Store(get_settings().db_url)


def _show(row, token: str | None, as_json: bool) -> None:
    from trainyard.jobs.accounts.users import user_document

    document = user_document(row, token)
    if as_json:
        emit_json(document)
        return
    state = "disabled" if row.disabled else "active"
    err.print(f"{row.name}: {row.role}, {state}")
    if token:
        err.print(f"API token (shown once): {token}")


@app.command()
def add(name: str, role: str = typer.Option("member", help=ROLE_HELP),
        password: bool = typer.Option(False, "--password", help="ask for a password (browser sign-in)"),
        as_json: bool = typer.Option(False, "--json", help="the user and a new API token, as JSON")) -> None:
    """Add a user, with a new personal API token."""
    from trainyard.jobs.accounts import audit, users

    store = _store()
    secret = typer.prompt("password", hide_input=True, confirmation_prompt=True) if password else None
    users.checked_role(role)  # before anything is written
    row = users.add_user(store, name, role, secret)
    token = users.new_token(store, name, "cli")
    audit.record(store, None, "user.add", name)
    _show(row, token, as_json)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json")) -> None:
    """Every user, oldest first."""
    from trainyard.jobs.accounts.users import list_users, user_document

    rows = list_users(_store())
    if as_json:
        emit_json([user_document(row) for row in rows])
        return
    for row in rows:
        err.print(f"{row.name:20} {row.role:8} {'disabled' if row.disabled else 'active'}")


@app.command()
def disable(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Disable a user: their tokens and sessions stop working at once."""
    from trainyard.jobs.accounts import audit, users

    store = _store()
    row = users.disable(store, name)
    audit.record(store, None, "user.disable", name)
    _show(row, None, as_json)


@app.command("set-role")
def set_role(name: str, role: str = typer.Argument(..., help=ROLE_HELP),
             as_json: bool = typer.Option(False, "--json")) -> None:
    """Change a user's role."""
    from trainyard.jobs.accounts import audit, users

    store = _store()
    row = users.set_role(store, name, role)
    audit.record(store, None, "user.set-role", f"{name}:{role}")
    _show(row, None, as_json)


@app.command("set-quota")
def set_quota(name: str, max_jobs: int = typer.Argument(..., help="running jobs at once; 0: no cap; "
                                                         "-1: the server's default (TRAINYARD_USER_MAX_JOBS)"),
              as_json: bool = typer.Option(False, "--json")) -> None:
    """Cap the jobs a user runs at once (the others wait, saying why)."""
    from trainyard.jobs.accounts import audit, users

    store = _store()
    row = users.set_quota(store, name, None if max_jobs == -1 else max_jobs)
    audit.record(store, None, "user.set-quota", f"{name}:{max_jobs}")
    _show(row, None, as_json)


@app.command()
def token(name: str, label: str = typer.Option("api", "--name", help="what the token is for"),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """A new personal API token of the user (several may be live; each is revocable)."""
    from trainyard.jobs.accounts import audit, users

    store = _store()
    secret = users.new_token(store, name, label)
    audit.record(store, None, "token.create", name)
    _show(users.get_user(store, name), secret, as_json)


@app.command()
def revoke(name: str, token_id: int = typer.Argument(..., help="the token's number (users tokens NAME)")) -> None:
    """Revoke one of the user's tokens."""
    from trainyard.jobs.accounts import audit, users

    store = _store()
    users.revoke_token(store, name, token_id)
    audit.record(store, None, "token.revoke", f"{name}:{token_id}")
    err.print(f"token {token_id} of {name} revoked")


@app.command()
def tokens(name: str) -> None:
    """The user's tokens: number, name, state (never the secret)."""
    from trainyard.jobs.accounts.users import get_user, list_tokens

    store = _store()
    get_user(store, name)
    for row in list_tokens(store, name):
        err.print(f"{row.id:4} {row.name:20} {'revoked' if row.revoked else 'live'}")
