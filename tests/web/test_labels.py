"""Tags and notes: ``PATCH /api/jobs/{id}``, ``trainyard jobs tag | note``, the job page and the
home list's tag filter."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.web.test_compare import add_run
from trainyard.cli.main import app as cli
from trainyard.jobs.store.labels import set_labels


@pytest.fixture
def runs(idle_app) -> list[str]:
    ctx = idle_app.state.ctx
    dataset = ctx.manager.create("dataset", "digits", {"name": "digits"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done")
    return [add_run(ctx, dataset.id, name, 0.1, [50.0]) for name in ("first", "second")]


def test_patch_sets_tags_and_notes_which_the_job_and_its_page_show(idle_client, runs):
    answer = idle_client.patch(f"/api/jobs/{runs[0]}", json={"tags": ["Baseline", "lr-search", "baseline"],
                                                         "notes": "  the first try  "})
    assert answer.status_code == 200
    assert answer.json()["tags"] == ["baseline", "lr-search"] and answer.json()["notes"] == "the first try"
    job = idle_client.get(f"/api/jobs/{runs[0]}").json()
    assert job["tags"] == ["baseline", "lr-search"] and job["notes"] == "the first try"
    answer = idle_client.patch(f"/api/jobs/{runs[0]}", json={"notes": "changed"})
    assert answer.json()["tags"] == ["baseline", "lr-search"]
    page = idle_client.get(f"/models/{runs[0]}").text
    assert '<a class="tag" href="/?tag=lr-search">lr-search</a>' in page and ">changed</textarea>" in page
    assert idle_client.get(f"/api/jobs/{runs[1]}").json()["tags"] == []


@pytest.mark.parametrize("body, status, words", [
    ({"tags": ["no spaces allowed"]}, 422, "tag 'no spaces allowed' should be"),
    ({"tags": ["x" * 33]}, 422, "should be 1 to 32"),
    ({"tags": [f"t{i}" for i in range(17)]}, 422, "at most 16"),
    ({"tags": "baseline"}, 422, "tags"),
    ({"notes": "x" * 10_001}, 422, "notes"),
    ({"status": "done"}, 422, "status"),
])
def test_bad_labels_are_refused_with_one_line(idle_client, runs, body, status, words):
    answer = idle_client.patch(f"/api/jobs/{runs[0]}", json=body)
    assert answer.status_code == status and words in answer.json()["detail"]
    assert "\n" not in answer.json()["detail"]
    assert idle_client.get(f"/api/jobs/{runs[0]}").json()["tags"] == []  # nothing half-applied


def test_unknown_job_is_404(idle_client):
    assert idle_client.patch("/api/jobs/nosuchjob", json={"tags": ["a"]}).status_code == 404


def test_the_home_list_shows_tags_and_filters_by_one(idle_client, runs):
    idle_client.patch(f"/api/jobs/{runs[1]}", json={"tags": ["keep"]})
    everything = idle_client.get("/").text
    assert runs[0] in everything and '<option value="keep"' in everything
    filtered = idle_client.get("/?tag=keep").text.split('id="models-table"', 1)[1]
    assert runs[1] in filtered and runs[0] not in filtered
    assert runs[0] not in idle_client.get("/partials/jobs?tag=KEEP").text  # tags are lower case


def test_cli_tags_and_notes(idle_app, runs, settings):
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": ""}

    def run(*args):
        return CliRunner().invoke(cli, ["jobs", *args], env=env)

    assert json.loads(run("tag", runs[0], "a", "b", "--json").stdout)["tags"] == ["a", "b"]
    assert json.loads(run("tag", runs[0], "c", "--json").stdout)["tags"] == ["a", "b", "c"]  # added
    assert json.loads(run("tag", runs[0], "b", "--remove", "--json").stdout)["tags"] == ["a", "c"]
    assert json.loads(run("note", runs[0], "works well", "--json").stdout)["notes"] == "works well"
    shown = json.loads(run("show", runs[0], "--json").stdout)
    assert shown["tags"] == ["a", "c"] and shown["notes"] == "works well"
    bad = run("tag", runs[0], "no/slashes")
    assert bad.exit_code == 2 and "no/slashes" in bad.stderr
    assert run("note", "nosuchjob", "x").exit_code == 2


def test_cli_lists_tags_and_filters_by_every_tag_given(idle_app, runs, settings):
    """Issue 31.7: ``jobs list`` shows each job's tags; ``--tag`` (repeatable) keeps jobs with all of them."""
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
           "TRAINYARD_AUTH_TOKEN": ""}
    store = idle_app.state.ctx.store
    set_labels(store, runs[0], tags=["baseline", "lr-search"])
    set_labels(store, runs[1], tags=["lr-search"])

    def listed(*args):
        result = CliRunner().invoke(cli, ["jobs", "list", *args], env=env)
        assert result.exit_code == 0, result.output
        return result

    lines = {line.split()[0]: line for line in listed().stdout.splitlines()}
    assert lines[runs[0]].endswith("first  [baseline, lr-search]") and lines[runs[1]].endswith("[lr-search]")
    def ids(*args):
        return [line.split()[0] for line in listed(*args).stdout.splitlines()]

    assert ids("--tag", "LR-search") == [runs[1], runs[0]]
    assert ids("--tag", "lr-search", "--tag", "baseline") == [runs[0]]
    both = json.loads(listed("--tag", "baseline", "--json").stdout)["jobs"]
    assert [(j["id"], j["tags"]) for j in both] == [(runs[0], ["baseline", "lr-search"])]
    none = listed("--tag", "nothing")
    assert none.stdout == "" and "no job is tagged nothing" in none.stderr


def test_notes_show_on_the_home_list(idle_client, runs):
    idle_client.patch(f"/api/jobs/{runs[0]}", json={"notes": "diverged: lr too high\nsecond line"})
    row = idle_client.get("/").text.split(f'data-job="{runs[0]}"', 1)[1].split("</tr>", 1)[0]
    assert ('<div class="small job-notes clip" title="diverged: lr too high\nsecond line">'
            'diverged: lr too high</div>') in row
