"""``trainyard audit``: the audit log of this home, newest first (jobs/accounts/audit.py).

Run on the server's machine with its home, like ``trainyard users``: whoever reads the home's
store is its admin already.
"""

from __future__ import annotations

import time

import typer

from trainyard.cli.output import emit_json, err


def audit(limit: int = typer.Option(50, min=1, max=10_000, help="the newest this many entries"),
          user: str | None = typer.Option(None, help="only this user's entries"),
          as_json: bool = typer.Option(False, "--json", help="the entries as JSON")) -> None:
    """The audit log: who did what, to which item, when and from where, newest first."""
    from trainyard.jobs.accounts.audit import entries
    from trainyard.jobs.store.store import Store
    from trainyard.settings import get_settings

    page = entries(Store(get_settings().db_url), limit, user)
    if as_json:
        emit_json(page)
        return
    for entry in page.entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.time))
        err.print(f"{when}  {entry.user or '(home)':12} {entry.action:16} {entry.target or '':24} "
                  f"{entry.source or ''}", soft_wrap=True)
