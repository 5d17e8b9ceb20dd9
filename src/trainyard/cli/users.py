"""``trainyard users add | list | disable | set-role | set-quota | token | revoke``: the server's accounts.

Run on the server's machine with its home (the store holds the users): whoever can write the
home is its admin already. ``add --json`` and ``token --json`` print the user with a new personal
API token in ``token``, shown this once (only its hash is kept).
"""

from __future__ import annotations

import typer

from trainyard.cli.output import emit_json, err
from trainyard.core.errors import InvalidInput

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
def list_(as_json: bool = typer.Option(False, "--json", help="with each user's quotas and usage")) -> None:
    """Every user, oldest first."""
    from trainyard.jobs.accounts.users import list_users, usage_of, user_document
    from trainyard.settings import get_settings

    store = _store()
    rows = list_users(store)
    if as_json:
        emit_json([user_document(row, usage=usage_of(store, row.name, get_settings())) for row in rows])
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
def set_quota(name: str,
              max_jobs: int | None = typer.Argument(None, help="running jobs at once; 0: no cap; "
                                                    "-1: the server's default (TRAINYARD_USER_MAX_JOBS)"),
              gpus: int | None = typer.Option(None, "--gpus", help="GPUs at once; 0: no cap; -1: the default"),
              cpu_slots: int | None = typer.Option(None, "--cpu-slots",
                                                   help="CPU training slots at once; 0: no cap; -1: the default"),
              disk: str | None = typer.Option(None, "--disk", help="disk of their datasets and models, in bytes "
                                              "or with K, M, G, T (binary); 0: no cap; -1: the default"),
              as_json: bool = typer.Option(False, "--json")) -> None:
    """Set a user's quotas (those not given stay): jobs and GPUs or CPU slots over one wait,
    saying why; a new dataset or model over the disk quota is refused."""
    from trainyard.jobs.accounts import audit, users

    given = {"max_jobs": max_jobs, "max_gpus": gpus, "max_cpu_slots": cpu_slots,
             "max_disk_bytes": None if disk is None else _bytes(disk)}
    changes = {field: None if value == -1 else value for field, value in given.items() if value is not None}
    if not changes:
        raise InvalidInput("name a quota to set: MAX_JOBS, --gpus, --cpu-slots or --disk")
    store = _store()
    row = users.set_quota(store, name, **changes)
    audit.record(store, None, "user.set-quota",
                 f"{name}:" + ",".join(f"{field}={given[field]}" for field in changes))
    _show(row, None, as_json)


UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _bytes(text: str) -> int:
    """``50G`` -> 53687091200; ``-1`` stays -1 (the default)."""
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = value[-1] if value and value[-1] in "KMGT" else ""
    try:
        number = float(value[: len(value) - len(unit)])
    except ValueError:
        raise InvalidInput(f"--disk {text!r}: give bytes, or a number with K, M, G or T (50G)") from None
    return -1 if number == -1 else int(number * UNITS[unit])


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
