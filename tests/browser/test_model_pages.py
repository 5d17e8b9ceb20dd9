"""Training through the browser: the new-model form, the live job page, abort, clone, Visualize.

Uses the live server of conftest.py (scheduler on, CPU only). Set TRAINYARD_SCREENSHOTS=DIR to
keep screenshots of the pages.
"""

from __future__ import annotations

import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.live_server import api

pytestmark = pytest.mark.browser


def shot(page, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("TRAINYARD_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def dataset(live_server) -> dict:
    """28x28 grayscale images of two classes: LeNet trains on them in well under a second an epoch."""
    job = api(live_server, "POST", "/api/datasets", {"name": "tiny digits", "train_folder": str(live_server.folder),
                                                     "width": 28, "height": 28, "channels": 1})
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        job = api(live_server, "GET", f"/api/jobs/{job['id']}")
        if job["status"] in ("done", "failed", "aborted"):
            break
        time.sleep(0.2)
    assert job["status"] == "done", job
    return job


def points(page) -> int:
    return int(page.get_attribute("#chart-main", "data-points") or 0)


def test_train_watch_abort_and_clone(live_server, dataset, page, tmp_path):
    page.goto(f"{live_server.url}/models/new?dataset={dataset['id']}")
    assert page.is_checked(f"#ds-{dataset['id']}")
    page.check("#net-lenet")
    page.fill("input[name=name]", "browser lenet")
    page.fill("input[name=epochs]", "400")  # long enough to watch, then abort
    page.fill("input[name=batch_size]", "4")
    page.fill("input[name=snapshot_interval]", "50")
    page.fill("input[name=base_lr]", "0.01")
    page.locator("#sweep-count").filter(has_text="Creates 1 job").wait_for()
    page.fill("input[name=base_lr]", "0.01, 0.001")  # a sweep is announced ...
    page.locator("#sweep-count").filter(has_text="Creates 2 jobs: 2 learning rates").wait_for()
    page.fill("input[name=base_lr]", "0.01")  # ... but one job is made here
    page.wait_for_function("document.querySelector('#lr-preview').dataset.points > 0")
    shot(page, "model_new", tmp_path)
    page.click("#create-button")  # what Create says meanwhile: tests/browser/test_model_create_progress.py
    # The first check of LeNet here starts a checker: 20 s and more on a loaded machine.
    page.wait_for_url(re.compile(r"/models/[\w-]+$"), timeout=120_000)
    job_id = page.url.rsplit("/", 1)[1]

    # Points arrive while the job runs: the chart grows between two looks.
    page.locator("#job-status").filter(has_text="running").wait_for(timeout=60_000)
    page.wait_for_function("document.querySelector('#chart-main').dataset.points > 0", timeout=60_000)
    first = points(page)
    page.wait_for_function(f"document.querySelector('#chart-main').dataset.points > {first}", timeout=30_000)
    assert page.inner_text("#job-status") == "running"
    assert page.inner_text("#stat-stream") == "live"

    # The hardware panel shows the job's CPU and memory (no GPU here).
    page.locator("#hw-cpu-percent").filter(has_text=re.compile(r"^\d+ %$")).wait_for()
    assert re.fullmatch(r"[\d.]+ GiB", page.inner_text("#hw-cpu-memory"))
    page.wait_for_function("document.querySelectorAll('#chart-lr canvas').length > 0")
    shot(page, "model_show_running", tmp_path)
    # Issue 22: the run time ticks while the job runs, without waiting for a status change
    ticked = page.inner_text("#run-time")
    assert "so far" in ticked
    page.wait_for_function(f"document.querySelector('#run-time').textContent !== {ticked!r}", timeout=10_000)

    page.once("dialog", lambda dialog: dialog.accept())  # Abort asks first (issue 31.9)
    page.click("#abort-button")
    page.locator("#job-status").filter(has_text="aborted").wait_for(timeout=30_000)
    assert page.is_hidden("#abort-button") and page.is_visible("#resume-button")
    deadline = time.monotonic() + 30  # the server records it once the process has exited
    while api(live_server, "GET", f"/api/jobs/{job_id}")["status"] != "aborted":
        assert time.monotonic() < deadline, "the server never recorded the abort"
        time.sleep(0.2)
    page.wait_for_timeout(2000)  # two polls later the page still says so
    assert page.inner_text("#job-status") == "aborted"
    shot(page, "model_show_aborted", tmp_path)
    # The timeline ends with the abort, live and drawn by the server, in one date format
    clock = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
    for _ in range(2):
        page.locator("#timeline-table tr").last.filter(has_text="aborted").wait_for(timeout=10_000)
        dates = page.locator("#timeline-table td:nth-child(2)").all_inner_texts()
        assert dates and all(clock.match(d) for d in dates), dates
        assert "so far" not in page.inner_text("#run-time")
        page.reload()
    # Settings: what the step policy reads (not power), and the seed the run drew
    solver = page.inner_text(".settings-group[data-group=Solver]")
    assert "Step size" in solver and "Gamma" in solver and "Power" not in solver
    assert re.search(r"Random seed\s+\d+ \(drawn at random\)", solver), solver

    page.click("#clone-button")
    page.wait_for_url(re.compile(rf"/models/new\?clone={job_id}$"))
    assert page.input_value("input[name=name]") == "browser lenet-2"
    assert page.input_value("input[name=epochs]") == "400"
    assert page.input_value("input[name=batch_size]") == "4"
    assert page.input_value("input[name=snapshot_interval]") == "50"
    assert page.is_checked("#net-lenet") and page.is_checked(f"#ds-{dataset['id']}")


def test_visualize_shows_layers_and_build_errors_with_their_line(live_server, dataset, page, tmp_path):
    page.goto(f"{live_server.url}/models/new?dataset={dataset['id']}")
    # A standard network: its layers with output shapes for this dataset's 1x28x28 images.
    page.click("tr[data-network=lenet] .visualize-standard")
    page.locator("#network-diagram .nv-layer").first.wait_for()
    assert "1×28×28" in page.inner_text("#network-view-title")
    assert "427,072 parameters" in page.inner_text("#network-diagram .nv-summary")  # for 2 classes

    page.click("button[data-tab=custom]")
    broken = "\n".join([
        "from torch import nn",
        "",
        "",
        "def build(num_classes, in_channels, image_size):",
        "    return nn.Sequential(",
        "        nn.Flatten(),",
        "        nn.Linear(in_channels * image_size * image_size, undefined_width),",
        "    )",
    ])
    page.evaluate("src => document.querySelector('.CodeMirror').CodeMirror.setValue(src)", broken)
    page.click("#visualize-custom")
    page.locator("#network-error").filter(has_text="Line 7").wait_for()
    assert "undefined_width" in page.inner_text("#network-error")
    assert page.locator(".CodeMirror .cm-error-line").count() == 1
    shot(page, "model_new_error", tmp_path)

    # "Customize" copies a standard network's source into the editor; GoogLeNet draws branches.
    page.click("button[data-tab=standard]")
    page.click("a.customize[data-network=googlenet]")
    page.wait_for_function("document.querySelector('.CodeMirror').CodeMirror.getValue().includes('Inception')")
    assert page.is_visible(".CodeMirror")
    page.uncheck(f"#ds-{dataset['id']}")  # GoogLeNet needs more than 28x28: no dataset = 224x224
    page.click("#visualize-custom")
    page.locator("#network-diagram .nv-branching").first.wait_for(timeout=60_000)
    inception = page.locator("#network-diagram .nv-branching").first
    assert inception.locator(":scope > .nv-branches > .nv-branch").count() == 4
    assert page.locator(".CodeMirror .cm-error-line").count() == 0
    shot(page, "model_new_googlenet", tmp_path)


def test_home_page_selects_several_jobs_to_abort_then_delete(live_server, dataset, page):
    sweep = {"name": "bulk", "datasets": [dataset["id"]], "networks": ["lenet"], "base_lrs": [0.01, 0.02],
             "batch_sizes": [4], "settings": {"epochs": 400}}
    ids = [job["id"] for job in api(live_server, "POST", "/api/models", sweep)["jobs"]]
    page.goto(f"{live_server.url}/?q=bulk")
    table = page.locator("#models-table")
    # One CPU slot: one job runs while the other waits, and the table tells them apart.
    table.locator("tr[data-job] .status-running").wait_for(timeout=60_000)
    table.locator("tr[data-job] .status-waiting").wait_for()
    assert table.locator("tr[data-job]").count() == 2

    table.locator(".select-all").check()
    assert page.inner_text("#selected-count") == "2 selected"
    page.wait_for_timeout(2500)  # a refresh of the tables keeps the selection
    assert page.inner_text("#selected-count") == "2 selected"
    assert table.locator(".job-select:checked").count() == 2

    page.on("dialog", lambda dialog: dialog.accept())  # Abort and Delete ask first
    page.click("#abort-selected")
    page.wait_for_function("document.querySelectorAll('#models-table .status-aborted').length === 2", timeout=60_000)
    page.click("#delete-selected")
    page.get_by_text("No model matches the filter.").wait_for(timeout=30_000)
    for job_id in ids:
        with pytest.raises(urllib.error.HTTPError):
            api(live_server, "GET", f"/api/jobs/{job_id}")

    # Sorting by a column header is kept in the address, so a reload keeps it too.
    page.fill("#job-filters input[name=q]", "")
    page.click("#datasets-table th[data-sort=name]")
    page.wait_for_url(re.compile(r"sort=name"))
    page.locator("#datasets-table th[data-sort=name].sorted-asc").wait_for()
