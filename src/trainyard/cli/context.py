"""Opening the shared job store from a command."""

from __future__ import annotations

from trainyard.jobs.context import Context, open_context


def cli_context() -> Context:
    """The store and manager, with jobs whose holder died already marked as interrupted (and
    their leases freed), so a command never shows a dead job as running or refuses to resume it."""
    ctx = open_context()
    ctx.manager.reap()
    return ctx
