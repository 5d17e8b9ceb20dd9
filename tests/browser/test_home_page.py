"""The home page in a browser: pages of jobs, filters that restart at page 1, redraws on change."""

from __future__ import annotations

import re
import time

import pytest

from trainyard.core.status import Status
from trainyard.jobs.store.store import Job, Store
from trainyard.web.listing import PER_PAGE
from trainyard.web.routers import pages

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def store(live_server):
    store = Store(live_server.settings.db_url)
    for i in range(PER_PAGE + 10):
        store.add_job(Job(id=f"pg{i:03d}", kind="model", name=f"paged {i:03d}", status=Status.DONE,
                          created_at=time.time() - 1000 + i))
    return store


def test_home_pages_filters_and_redraws_only_on_change(live_server, store, page, monkeypatch):
    # The tables are also redrawn every REDRAW_S for the ages that move with the clock alone; a
    # boundary inside this test's idle window would redraw, so the interval is out of its reach.
    monkeypatch.setattr(pages, "REDRAW_S", 3600)
    page.goto(f"{live_server.url}/")
    table = page.locator("#models-table")
    assert table.locator("tr[data-job]").count() == PER_PAGE
    assert table.locator("tr[data-job]").first.get_attribute("data-job") == f"pg{PER_PAGE + 9:03d}"

    page.click("#models-table ~ .pager .page-link:text('Older')")
    page.wait_for_url(re.compile(r"mpage=2"))
    page.wait_for_function("document.querySelectorAll('#models-table tr[data-job]').length === 10")
    assert table.locator("tr[data-job]").last.get_attribute("data-job") == "pg000"

    page.fill("#job-filters input[name=q]", "paged 0")  # a filter starts again at page 1
    page.wait_for_function(f"document.querySelectorAll('#models-table tr[data-job]').length === {PER_PAGE}")
    assert table.locator("tr[data-job]").first.get_attribute("data-job") == "pg059"
    assert "mpage" not in page.url and page.input_value("#job-filters input[name=mpage]") == "1"

    # Only requests sent from now on: a slow answer to the filter's own request is not a redraw.
    answers: list[int] = []
    asked: set = set()
    page.on("request", lambda r: asked.add(r) if "/partials/jobs" in r.url else None)
    page.on("response", lambda r: answers.append(r.status) if r.request in asked else None)
    page.wait_for_timeout(4500)  # two refreshes with nothing changed: nothing redrawn
    assert answers and set(answers) == {204}
    store.update_job("pg055", status=Status.FAILED, error="changed behind the page")
    page.locator("#models-table tr[data-job=pg055] .status-failed").wait_for(timeout=10_000)
    assert 200 in answers


def test_a_phone_sees_each_models_best_accuracy(live_server, store, page):
    """Issue 22: at 390 px the models table scrolled its best accuracy out of sight."""
    store.update_job("pg000", summary={"best": {"epoch": 3, "val_accuracy": 87.5}})
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{live_server.url}/?q=paged+000")
    best = page.locator("#models-table th", has_text="Best val. accuracy")
    box = best.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    cell = page.locator("#models-table tr[data-job=pg000] td.best")
    cell_box = cell.bounding_box()
    assert cell_box is not None and cell_box["x"] + cell_box["width"] <= 390 and "87.50%" in cell.inner_text()
