"""An unknown job id is refused before the job store opens (issue 22), and only then: an id the
store holds, or a store that is not the default SQLite file, goes the normal way."""

from __future__ import annotations

import pytest

from tests.cli.test_cli_lazy import run
from trainyard.cli.known_jobs import default_sqlite_store, refuse_unknown
from trainyard.core.errors import NotFound
from trainyard.jobs.context import open_context
from trainyard.settings import Settings


@pytest.mark.parametrize("env", [
    {"TRAINYARD_HOME": "{tmp}/home"},
    {"trainyard_home": "{tmp}/lower/../home2"},  # pydantic-settings reads names case-insensitively
    {"TRAINYARD_HOME": "~/somewhere"},
    {},
])
def test_the_store_file_is_the_one_settings_opens(env, tmp_path, monkeypatch):
    for key in ("TRAINYARD_HOME", "TRAINYARD_DATABASE_URL"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(tmp=tmp_path))
    assert f"sqlite:///{default_sqlite_store()}" == Settings().db_url


def test_another_database_is_never_answered_here(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINYARD_HOME", str(tmp_path))
    monkeypatch.setenv("TRAINYARD_DATABASE_URL", "postgresql+psycopg://nobody@localhost/none")
    assert default_sqlite_store() is None
    refuse_unknown("nosuch")  # no answer: the store itself will say


def test_unknown_ids_are_refused_and_known_ones_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINYARD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRAINYARD_DATABASE_URL", raising=False)
    with pytest.raises(NotFound, match="no job with id 'nosuch'"):
        refuse_unknown("nosuch")  # no store yet
    ctx = open_context()
    job = ctx.manager.create("model", "m", {"kind": "model"}, needs={"pool": "cpu"})
    refuse_unknown(job.id)
    with pytest.raises(NotFound, match="no job with id 'nosuch'"):
        refuse_unknown("nosuch")


def test_jobs_show_of_an_unknown_id_loads_no_store(tmp_path):
    for args in (["jobs", "show", "nosuch"], ["jobs", "abort", "nosuch"], ["jobs", "note", "nosuch", "x"],
                 ["dataset", "show", "nosuch"], ["export", "nosuch", "-o", str(tmp_path / "m.tar.gz")],
                 ["jobs", "resume", "nosuch"], ["evaluate", "nosuch"], ["classify", "nosuch", str(tmp_path)]):
        answer, output = run(args, tmp_path)
        what = "model" if args[0] in ("export", "evaluate", "classify") else "job"
        assert answer["code"] == 2 and f"no {what} with id 'nosuch'" in output, (args, output)
        assert answer["heavy"] == [], args


def test_classify_refuses_a_top_out_of_range_before_anything_loads(tmp_path):
    answer, output = run(["classify", "nosuch", str(tmp_path), "--top", "0"], tmp_path)
    assert answer["code"] == 2 and "Invalid value for '--top': 0 is not in the range 1<=x<=100." in output
    assert answer["heavy"] == []
