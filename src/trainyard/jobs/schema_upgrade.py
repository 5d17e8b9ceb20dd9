"""Bring a database made by an older trainyard up to today's tables: add the columns and indexes it lacks.

`create_all` makes missing tables but never alters existing ones, so a column added later (such
as ``jobs.updated_at``) is added here with ALTER TABLE, nullable, and filled where a value makes
sense; an index added later is created the same way. Only additions: a column is never changed or dropped.
"""

from __future__ import annotations

from sqlalchemy import Engine, Table, inspect, text

# Values for rows that predate a column: {column: SQL expression over the row}.
BACKFILL = {"updated_at": "COALESCE(finished_at, started_at, created_at)"}


def add_missing_columns(engine: Engine, table: Table) -> list[str]:
    """Add the columns of ``table`` that the database's table lacks; return their names."""
    have = {c["name"] for c in inspect(engine).get_columns(table.name)}
    missing = [c for c in table.columns if c.name not in have]
    indexes = {i["name"] for i in inspect(engine).get_indexes(table.name)}
    for index in table.indexes:  # indexes added later, on columns that exist
        if index.name not in indexes and all(c.name in have for c in index.columns):
            index.create(engine)
    if not missing:
        return []
    preparer = engine.dialect.identifier_preparer
    with engine.begin() as conn:
        for column in missing:
            kind = column.type.compile(dialect=engine.dialect)
            name = preparer.quote(column.name)
            conn.execute(text(f"ALTER TABLE {preparer.quote(table.name)} ADD COLUMN {name} {kind}"))
            if column.name in BACKFILL:
                conn.execute(text(f"UPDATE {preparer.quote(table.name)} SET {name} = {BACKFILL[column.name]}"))
    added = {c.name for c in missing}
    for index in list(table.indexes):
        if any(c.name in added for c in index.columns):
            index.create(engine, checkfirst=True)
    return [c.name for c in missing]
