"""Connecting to the store's database: SQLite (the default) or PostgreSQL, each set up as it needs.

SQLite is a file that the server and foreground CLI commands share: WAL mode and a long busy
timeout let them take turns. PostgreSQL is a server that several trainyard servers may share:
connections are checked before use (the database may restart under a long-running server), and
the tables are created under an advisory lock, since two servers starting at once on an empty
database would otherwise both try to create them and one would fail (on SQLite, the loser
looks again).
"""

from __future__ import annotations

import time

from sqlalchemy import Connection, Engine, MetaData, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

# Any constant shared by every trainyard process; it names the lock, not a table.
_SCHEMA_LOCK = 0x7472_6169_6E79  # "trainy"


def normalize_url(url: str) -> str:
    """Use psycopg (version 3, the ``postgres`` extra) for a bare ``postgresql://`` URL.

    SQLAlchemy would otherwise pick psycopg2, which trainyard does not install.
    """
    parsed = make_url(url)
    if parsed.drivername not in ("postgresql", "postgres"):
        return url
    return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")  # the CLI and the server share the file
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def open_engine(url: str) -> Engine:
    """An engine for ``url``, configured for its kind of database."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def create_tables(engine: Engine, metadata: MetaData) -> None:
    """Create missing tables; on PostgreSQL one process at a time (see the module docstring)."""
    if not is_postgres(engine):
        attempts = 10  # each lost race means another process made a table: fewer left to make
        for attempt in range(attempts):
            try:
                with engine.begin() as connection:
                    metadata.create_all(connection)
                    _add_missing_columns(connection, metadata)
                return
            except OperationalError as exc:
                # Another process (a server and a CLI starting at once) was first: look again.
                if not ("already exists" in str(exc) or "duplicate column" in str(exc)) or attempt == attempts - 1:
                    raise
                time.sleep(0.02 * (attempt + 1))
    with engine.begin() as connection:
        # Released at the end of this transaction, after the tables are committed.
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})
        metadata.create_all(connection)
        _add_missing_columns(connection, metadata)


def _add_missing_columns(connection: Connection, metadata: MetaData) -> None:
    """Add columns that a newer trainyard declares to tables an older one created.

    Only nullable columns are ever added, so existing rows stay valid with NULL in them.
    """
    inspector = inspect(connection)
    for table in metadata.sorted_tables:
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in present and column.nullable:
                kind = column.type.compile(dialect=connection.dialect)
                connection.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'))
