"""events.jsonl: written whole, tailed incrementally, torn lines skipped, ids stable."""

from trainyard.core.events import EventTail, EventWriter, read_events


def test_tail_returns_each_event_once_with_line_ids(tmp_path):
    writer = EventWriter(tmp_path)
    tail = EventTail(tmp_path / "events.jsonl")
    writer.progress(1, 10, phase="train")
    writer.log("hello")
    first = tail.read_new()
    assert [(i, e["type"]) for i, e in first] == [(0, "progress"), (1, "log")]
    assert tail.read_new() == []
    writer.status("done")
    assert [(i, e["status"]) for i, e in tail.read_new()] == [(2, "done")]
    assert "hello" in (tmp_path / "log.txt").read_text()


def test_tail_holds_back_a_line_without_its_newline(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "log", "time": 1}\n{"type": "pro')
    tail = EventTail(path)
    assert len(tail.read_new()) == 1
    with open(path, "a") as f:
        f.write('gress", "time": 2, "done": 1, "total": 2}\n')
    assert [e["type"] for _, e in tail.read_new()] == ["progress"]


def test_start_id_skips_events_a_client_already_has(tmp_path):
    writer = EventWriter(tmp_path)
    for i in range(5):
        writer.emit("metric", epoch=i, name="x", value=i)
    tail = EventTail(tmp_path / "events.jsonl", start_id=3)
    assert [i for i, _ in tail.read_new()] == [3, 4]


def test_torn_line_is_skipped_but_numbering_is_kept(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "a"}\n{"type": broken\n{"type": "c"}\n')
    assert [(i, e["type"]) for i, e in EventTail(path).read_new()] == [(0, "a"), (2, "c")]
    assert [e["type"] for e in read_events(path, {"c"})] == ["c"]
