"""Bring the jobs table of a database made by an older trainyard up to what listings need.

`database.create_tables` adds missing tables and nullable columns; this adds what it does not:
indexes declared later (on columns that exist) and a value for ``updated_at`` in rows written
before that column existed (or by a writer that leaves it out), so deltas and the listing's
version see them. Only additions: nothing is changed or dropped.
"""

from __future__ import annotations

from sqlalchemy import Engine, Table, inspect, text
from sqlalchemy.exc import DBAPIError

# Values for rows that lack one: {column: SQL expression over the row}.
BACKFILL = {"updated_at": "COALESCE(finished_at, started_at, created_at)"}


def upgrade_table(engine: Engine, table: Table) -> None:
    """Create ``table``'s missing indexes and fill its BACKFILL columns where they are NULL."""
    inspector = inspect(engine)
    have = {c["name"] for c in inspector.get_columns(table.name)}
    indexes = {i["name"] for i in inspector.get_indexes(table.name)}
    for index in table.indexes:
        if index.name not in indexes and all(c.name in have for c in index.columns):
            try:
                index.create(engine, checkfirst=True)
            except DBAPIError:  # another process opening the same database made it first
                if index.name not in {i["name"] for i in inspect(engine).get_indexes(table.name)}:
                    raise
    preparer = engine.dialect.identifier_preparer
    quoted_table = preparer.quote(table.name)
    with engine.begin() as conn:
        for column, value in BACKFILL.items():
            if column not in have:
                continue
            name = preparer.quote(column)
            # Looked for first: a database that is up to date is only read, so a read-only home
            # still opens (and its requests answer 503 with a message, not a crash at start-up).
            if conn.execute(text(f"SELECT 1 FROM {quoted_table} WHERE {name} IS NULL LIMIT 1")).first():
                conn.execute(text(f"UPDATE {quoted_table} SET {name} = {value} WHERE {name} IS NULL"))
