"""The home page and GET /api/jobs in pages, and refreshes that redraw only when a job changed."""

from __future__ import annotations

import re

from trainyard.core.status import Status
from trainyard.jobs.store.store import Job
from trainyard.web.listing import PER_PAGE

T0 = 1_700_000_000.0


def add_models(idle_app, count: int, **fields) -> list[str]:
    """``count`` models created a second apart; ids in creation order (oldest first)."""
    store = idle_app.state.ctx.store
    ids = []
    for i in range(count):
        job_id = f"m{i:04d}"
        values = {"name": f"model {i:04d}", "status": Status.DONE, "progress": (i * 7 % 13) / 13,
                  "group": f"sweep{i % 3}" if i % 2 else None, **fields}
        store.add_job(Job(id=job_id, kind="model", created_at=T0 + i, **values))
        ids.append(job_id)
    return ids


def rows(html: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)"', html.split('id="models-table"', 1)[1].split("</table>")[0])


def all_pages(idle_client, query: str) -> list[str]:
    found, page = [], 1
    while True:
        html = idle_client.get(f"/partials/jobs?{query}&mpage={page}").text
        found += rows(html)
        if f"page {page} of" not in html or f'data-page="{page + 1}" disabled' in html:
            return found
        page += 1


def test_home_shows_the_newest_page_and_pages_to_older_ones(idle_app, idle_client):
    ids = add_models(idle_app, 2 * PER_PAGE + 20)
    newest_first = ids[::-1]
    html = idle_client.get("/").text
    assert rows(html) == newest_first[:PER_PAGE]
    assert f"page 1 of 3 (1–{PER_PAGE} of {len(ids)})" in html
    assert rows(idle_client.get("/?mpage=2").text) == newest_first[PER_PAGE:2 * PER_PAGE]
    assert rows(idle_client.get("/?mpage=3").text) == newest_first[2 * PER_PAGE:]
    assert rows(idle_client.get("/?mpage=99").text) == newest_first[2 * PER_PAGE:]  # past the end: the last


def test_sorting_and_filtering_run_over_every_job_not_one_page(idle_app, idle_client):
    ids = add_models(idle_app, 2 * PER_PAGE + 20)
    by_progress = sorted(ids, key=lambda i: ((int(i[1:]) * 7 % 13) / 13, T0 + int(i[1:])), reverse=True)
    assert all_pages(idle_client, "sort=progress&order=desc") == by_progress
    assert all_pages(idle_client, "sort=name&order=asc") == ids
    matching = [i for i in ids if "01" in f"model {i[1:]}"]
    html = idle_client.get("/partials/jobs?q=01").text
    assert rows(html) == matching[::-1] and f"{len(matching)} of {len(ids)}" in html


def test_groups_stay_whole_and_in_order_across_pages(idle_app, idle_client):
    ids = add_models(idle_app, 2 * PER_PAGE + 20)
    key = {i: f"sweep{int(i[1:]) % 3}" if int(i[1:]) % 2 else "" for i in ids}
    newest_first, order = ids[::-1], []
    for job_id in newest_first:  # groups where their first job falls, jobs in sort order inside
        if key[job_id] not in order:
            order.append(key[job_id])
    expected = [j for group in order for j in newest_first if key[j] == group]
    assert all_pages(idle_client, "group=sweep") == expected


def test_a_refresh_redraws_only_after_a_job_changed(idle_app, idle_client):
    ids = add_models(idle_app, 5, status=Status.RUNNING)
    first = idle_client.get("/partials/jobs")
    version = first.headers["X-Jobs-Version"]
    same = idle_client.get("/partials/jobs", params={"since": version})
    assert same.status_code == 204 and same.content == b""
    idle_app.state.ctx.store.update_job(ids[0], status=Status.FAILED, error="diverged")
    changed = idle_client.get("/partials/jobs", params={"since": version})
    assert changed.status_code == 200 and "diverged" in changed.text
    version = changed.headers["X-Jobs-Version"]
    idle_app.state.ctx.store.delete_job(ids[1])
    after_delete = idle_client.get("/partials/jobs", params={"since": version})
    assert after_delete.status_code == 200 and ids[1] not in rows(after_delete.text)
    home = idle_client.get("/").text  # the first render carries the version the script sends back
    assert f'data-version="{after_delete.headers["X-Jobs-Version"]}"' in home


def test_api_pages_with_a_cursor_and_keeps_the_old_shape_without_limit(idle_app, idle_client):
    ids = add_models(idle_app, 25)
    everything = idle_client.get("/api/jobs").json()
    assert [j["id"] for j in everything["jobs"]] == ids[::-1] and everything["next_cursor"] is None
    seen, cursor = [], None
    while True:
        page = idle_client.get("/api/jobs", params={"limit": 10, **({"cursor": cursor} if cursor else {})}).json()
        assert len(page["jobs"]) <= 10 and page["total"] == 25
        seen += [j["id"] for j in page["jobs"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]
    assert idle_client.get("/api/jobs", params={"cursor": "nonsense"}).status_code == 422
    assert idle_client.get("/api/jobs", params={"limit": 0}).status_code == 422


def test_api_updated_since_returns_only_the_jobs_that_changed(idle_app, idle_client):
    ids = add_models(idle_app, 30, status=Status.RUNNING)
    as_of = idle_client.get("/api/jobs", params={"limit": 5}).json()["as_of"]
    assert idle_client.get("/api/jobs", params={"updated_since": as_of}).json()["jobs"] == []
    idle_app.state.ctx.store.update_job(ids[3], progress=0.5)
    delta = idle_client.get("/api/jobs", params={"updated_since": as_of}).json()
    assert [j["id"] for j in delta["jobs"]] == [ids[3]] and delta["jobs"][0]["progress"] == 0.5
    assert delta["as_of"] > as_of
