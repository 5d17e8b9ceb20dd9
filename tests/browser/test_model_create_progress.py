"""The new-model form says what Create is doing: "Checking the network…", then "Creating 2
jobs…", and while the server's checker is full, when it tries again (a 429's Retry-After)."""

from __future__ import annotations

import json
import time

import pytest

from tests.live_server import api

pytestmark = pytest.mark.browser

# Every text #create-status shows, in order, kept across the page's own changes.
RECORD_STATUSES = """() => {
  window.statuses = [];
  const box = document.getElementById("create-status");
  new MutationObserver(() => { if (box.textContent.trim()) window.statuses.push(box.textContent.trim()); })
    .observe(box, { childList: true, subtree: true, characterData: true });
}"""


@pytest.fixture(scope="module")
def dataset(live_server) -> dict:
    job = api(live_server, "POST", "/api/datasets", {"name": "progress digits", "train_folder": str(live_server.folder),
                                                     "width": 28, "height": 28, "channels": 1})
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and job["status"] not in ("done", "failed", "aborted"):
        time.sleep(0.2)
        job = api(live_server, "GET", f"/api/jobs/{job['id']}")
    assert job["status"] == "done", job
    return job


def test_create_says_checking_then_creating_and_waits_out_a_busy_checker(live_server, dataset, page):
    checks = []

    def busy_once(route):
        checks.append(route.request.post_data_json)
        if len(checks) == 1:  # the checker is full the first time
            route.fulfill(status=429, headers={"Retry-After": "1", "Content-Type": "application/json"},
                          body=json.dumps({"detail": "the server is busy checking 4 other networks; try again in 1 s"}))
        else:
            route.continue_()

    created = []

    def stop_before_creating(route):  # the page stays, to be read; the real create is tested elsewhere
        created.append(route.request.post_data_json)
        route.fulfill(status=409, content_type="application/json", body=json.dumps({"detail": "stopped by the test"}))

    page.route("**/api/models/check", busy_once)
    page.route("**/api/models", stop_before_creating)
    page.goto(f"{live_server.url}/models/new?dataset={dataset['id']}")
    page.evaluate(RECORD_STATUSES)
    page.check("#net-lenet")
    page.fill("input[name=name]", "progress")
    page.fill("input[name=base_lr]", "0.01, 0.02")
    page.locator("#create-button").filter(has_text="Create 2 jobs").wait_for()
    page.click("#create-button")
    page.locator("#form-error").filter(has_text="stopped by the test").wait_for(timeout=120_000)

    statuses = page.evaluate("window.statuses")
    shown = [s for i, s in enumerate(statuses) if i == 0 or s != statuses[i - 1]]
    assert shown == ["Checking the network…", "The server is checking other networks; trying again in 1 s…",
                     "Checking the network…", "Creating 2 jobs…"]
    assert len(checks) == 2 and checks[1]["base_lrs"] == [0.01, 0.02] and created == [checks[1]]
    assert page.inner_text("#create-status") == ""
    assert page.is_enabled("#create-button")  # ready to try again


def test_a_check_that_ran_out_of_time_is_not_called_a_broken_network(live_server, dataset, page):
    timed_out = {"ok": False, "line": None, "transient": True, "timed_out": True,
                 "error": "the check took longer than 600 s, so it says nothing about the network "
                          "(the limit is TRAINYARD_CHECK_TIMEOUT_S)"}
    page.route("**/api/networks/inspect", lambda route: route.fulfill(
        status=200, content_type="application/json", body=json.dumps(timed_out)))
    page.goto(f"{live_server.url}/models/new?dataset={dataset['id']}")
    page.click(".visualize-standard[data-network=lenet]")
    page.locator("#network-view-title").filter(has_text="lenet: not checked").wait_for()
    assert "does not build" not in page.inner_text("#network-view")
    assert page.inner_text("#network-error").startswith("the check took longer than 600 s")
