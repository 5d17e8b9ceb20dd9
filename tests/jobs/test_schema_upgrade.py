"""A database made before a column existed opens, gains the column and keeps its jobs."""

from __future__ import annotations

import sqlite3

from trainyard.jobs.store.store import Store

OLD_JOBS = (
    'CREATE TABLE jobs (id VARCHAR(40) PRIMARY KEY, kind VARCHAR(20), name VARCHAR(200), '
    'status VARCHAR(20), status_detail TEXT, error TEXT, parent_id VARCHAR(40), "group" VARCHAR(200), '
    'needs JSON, summary JSON, progress FLOAT, eta FLOAT, pid INTEGER, abort_requested BOOLEAN, '
    'owner_pid INTEGER, created_at FLOAT, started_at FLOAT, finished_at FLOAT)'
)


def test_a_database_without_updated_at_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(OLD_JOBS)
        db.execute("INSERT INTO jobs VALUES ('a', 'model', 'old', 'done', NULL, NULL, NULL, NULL, "
                   "'{}', '{}', 1.0, NULL, NULL, 0, NULL, 10.0, 11.0, 12.0)")
    store = Store(f"sqlite:///{path}")
    assert store.get_job("a").updated_at == 12.0  # filled from when it last changed
    store.update_job("a", name="renamed")
    assert store.get_job("a").updated_at > 12.0
    assert [j.id for j in Store(f"sqlite:///{path}").list_jobs()] == ["a"]  # a second open is a no-op
