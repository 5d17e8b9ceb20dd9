"""A browser that opens a bad address gets a page (the site's header, what went wrong, a way back);
the API, and scripts asking for JSON, keep ``{"detail": one line}`` exactly (issue 31.5)."""

from __future__ import annotations

import pytest

from tests.web.test_compare import add_run

PAGE = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture
def run_id(idle_app) -> str:
    ctx = idle_app.state.ctx
    dataset = ctx.manager.create("dataset", "digits", {"name": "digits"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done")
    return add_run(ctx, dataset.id, "fast", 0.1, [60.0, 90.0])


@pytest.mark.parametrize("path, words, back", [
    ("/models/bad-id", "No model with id &#39;bad-id&#39;.", "/"),
    ("/datasets/bad", "No dataset with id &#39;bad&#39;.", "/"),
    ("/compare?ids={run},bad", "No job with id &#39;bad&#39;.", "/"),
    ("/sweeps?group=nothing", "No sweep named &#39;nothing&#39;.", "/sweeps"),
    ("/no/such/page", "There is no page at /no/such/page.", "/"),
])
def test_a_bad_address_in_the_browser_is_a_page_with_the_header_and_a_way_back(idle_client, run_id, path,
                                                                                words, back):
    answer = idle_client.get(path.format(run=run_id), headers=PAGE)
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/html")
    html = answer.text
    assert '<header class="topbar">' in html and '<a href="/sweeps">Sweeps</a>' in html
    assert f'<p id="error-message">{words}</p>' in html
    assert f'id="error-back" href="{back}"' in html


@pytest.mark.parametrize("path, detail", [
    ("/api/models/bad-id", "no model with id 'bad-id'"),
    ("/api/jobs/compare?ids=bad", "no job with id 'bad'"),
    ("/api/no/such/route", "Not Found"),
])
def test_the_api_keeps_its_json_errors_even_for_a_browser(idle_client, path, detail):
    for headers in ({}, PAGE):  # a browser opening an API address reads the JSON too
        answer = idle_client.get(path, headers=headers)
        assert answer.status_code == 404
        assert answer.json() == {"detail": detail}


def test_a_script_asking_a_page_address_for_json_gets_json(idle_client):
    answer = idle_client.get("/models/bad-id", headers={"Accept": "application/json"})
    assert answer.status_code == 404 and answer.json() == {"detail": "no model with id 'bad-id'"}
