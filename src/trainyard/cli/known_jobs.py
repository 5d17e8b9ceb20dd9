"""Refusing a job id the store does not hold without opening the store (issue 22).

Opening the store imports SQLAlchemy, pydantic's settings and the manager: about 7x the time
Python takes to import Typer and Rich, for a command that only says "no job with id ...". The
default store is the SQLite file in TRAINYARD_HOME, and the standard library's sqlite3 answers
"is this id there?" in milliseconds, read-only. So where that is the store, an id it lacks is
refused here with the store's own message; anything else (another database such as
PostgreSQL, where several users' homes share one store; a file that cannot be read; an id that
is there) goes the normal way, so this never refuses what the store would accept.

The folder of a job is no proof: with PostgreSQL a job may live in another user's home.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from trainyard.core.errors import NotFound


def default_sqlite_store() -> Path | None:
    """The SQLite file that is the store, as trainyard.settings works it out, or None where the
    store is another database. Read from the environment as pydantic-settings reads it (names
    case-insensitive, no .env file), without importing pydantic; tests/cli/test_known_jobs.py
    holds it to Settings.db_url."""
    env = {key.lower(): value for key, value in os.environ.items()}
    if env.get("trainyard_database_url"):
        return None
    home = env.get("trainyard_home")
    if home == "":  # an odd value: let Settings make what it will of it
        return None
    root = Path(home).expanduser() if home is not None else Path.home() / ".trainyard"
    return root.resolve() / "trainyard.db"


def refuse_unknown(job_id: str, message: str | None = None) -> None:
    """Raise NotFound when the default store surely lacks ``job_id``, with the command's own
    message for it (by default JobManager.get's)."""
    path = default_sqlite_store()
    if path is None:
        return
    message = message or f"no job with id {job_id!r}"
    if not path.exists():  # no store yet: it holds no job
        raise NotFound(message)
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            found = db.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone()
        finally:
            db.close()
    except sqlite3.Error:  # locked, no table yet, unreadable: the store answers instead
        return
    if found is None:
        raise NotFound(message)
