"""The store's job status is a typed Status, stored as the plain strings older databases hold."""

from __future__ import annotations

import time

from sqlalchemy import text

from trainyard.core.status import Status
from trainyard.jobs.store.store import Job, Store


def test_a_row_written_as_a_plain_string_reads_back_as_a_status(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    with store.engine.begin() as conn:  # as a database from before the typed column
        conn.execute(text("INSERT INTO jobs (id, kind, name, status, needs, summary, progress, "
                          "abort_requested, created_at) VALUES ('old', 'model', 'm', 'done', '{}', '{}', "
                          "0, 0, :now)"), {"now": time.time()})
    job = store.get_job("old")
    assert job.status is Status.DONE and job.status.is_final
    assert [j.id for j in store.list_jobs(statuses=["done"])] == ["old"]
    assert store.list_jobs(statuses=["no-such-status"]) == []


def test_a_status_set_from_an_event_string_is_a_status_in_the_row_and_the_history(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store.add_job(Job(id="j", kind="model", name="m", status="queued"))
    job = store.update_job("j", status="running")  # events.jsonl carries plain strings
    assert job.status is Status.RUNNING
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT status FROM jobs")).scalar_one() == "running"
    assert [c.status for c in store.history("j")] == [Status.QUEUED, Status.RUNNING]
