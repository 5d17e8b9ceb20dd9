"""Opening the shared job store from a command."""

from __future__ import annotations

from trainyard.jobs.context import Context, open_context


def cli_context() -> Context:
    return open_context()
