"""GET /api/jobs/{id}/events: a job's events as Server-Sent Events, resumable with Last-Event-ID."""

from __future__ import annotations

import json

import pytest

from trainyard.core.paths import JobFolder
from trainyard.settings import Settings


def parse_sse(text: str) -> list[dict]:
    """Messages of an event stream as {"id", "event", "data"} (comments dropped)."""
    messages = []
    for block in text.split("\n\n"):
        fields: dict = {}
        for line in block.splitlines():
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
        if fields:
            fields["data"] = json.loads(fields["data"])
            messages.append(fields)
    return messages


@pytest.fixture(scope="module")
def server(tmp_path_factory, client_for):
    tmp = tmp_path_factory.mktemp("sse")
    settings = Settings(home=tmp / "home", data_roots=[tmp / "data"])
    with client_for(settings) as client:
        yield client, settings


@pytest.fixture(scope="module")
def finished(server, wait_job, make_images) -> tuple[str, list[dict]]:
    """A dataset job streamed live from the moment it was queued until it ended."""
    client, settings = server
    folder = make_images(settings.data_roots[0] / "images", {"cat": 3, "dog": 3})
    response = client.post("/api/datasets", json={"name": "sse", "train_folder": str(folder),
                                                  "width": 16, "height": 16})
    job_id = response.json()["id"]
    live = client.get(f"/api/jobs/{job_id}/events")  # returns once the stream ends
    assert live.status_code == 200
    assert live.headers["content-type"].startswith("text/event-stream")
    assert wait_job(client, job_id)["status"] == "done"
    return job_id, parse_sse(live.text)


@pytest.fixture
def client(server):
    return server[0]


def test_live_stream_carries_every_event_then_end(finished, server):
    settings = server[1]
    job_id, messages = finished
    *events, end = messages
    assert end["event"] == "end" and "id" not in end
    assert end["data"] == {"status": "done"}

    written = [json.loads(line) for line in JobFolder(settings.jobs_dir / job_id).events.read_text().splitlines()]
    assert [int(m["id"]) for m in events] == list(range(len(written)))
    assert [m["data"] for m in events] == written
    assert [m["event"] for m in events] == [e["type"] for e in written]
    statuses = [m["data"]["status"] for m in events if m["event"] == "status"]
    assert statuses == ["running", "done"]
    assert any(m["event"] == "progress" for m in events)
    assert any(m["event"] == "result" for m in events)


def test_stream_of_an_ended_job_replays_everything(client, finished):
    job_id, live = finished
    replay = parse_sse(client.get(f"/api/jobs/{job_id}/events").text)
    assert replay == live


def test_last_event_id_resumes_after_that_event(client, finished):
    job_id, live = finished
    k = 2
    resumed = parse_sse(client.get(f"/api/jobs/{job_id}/events", headers={"Last-Event-ID": str(k)}).text)
    assert resumed[-1]["event"] == "end"
    assert [m["id"] for m in resumed[:-1]] == [m["id"] for m in live[k + 1:-1]]
    assert resumed[0]["id"] == str(k + 1)

    by_query = parse_sse(client.get(f"/api/jobs/{job_id}/events", params={"after": k}).text)
    assert by_query == resumed


def test_last_event_id_past_the_end_gets_only_end(client, finished):
    job_id, live = finished
    last = int(live[-2]["id"])
    resumed = parse_sse(client.get(f"/api/jobs/{job_id}/events", headers={"Last-Event-ID": str(last)}).text)
    assert resumed == [{"event": "end", "data": {"status": "done"}}]


def test_unknown_job_has_no_stream(client):
    assert client.get("/api/jobs/nope/events").status_code == 404
