"""The small things a new user met in the browser in the first hour (issue 31.9), each as they see it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.live_server import BROWSER_TOKEN, serving
from tests.trained_model import colour_image
from tests.web.test_compare import add_run
from trainyard.jobs.scheduling.resources import Pools
from trainyard.settings import Settings

pytestmark = pytest.mark.browser
SCREENSHOTS = Path(os.environ.get("TRAINYARD_SCREENSHOTS", "/tmp/trainyard-screenshots"))


@pytest.fixture(scope="module")
def quiet(tmp_path_factory):
    """A server without a scheduler over jobs written here: a "running" job stays so, untouched."""
    from trainyard.web.app import create_app

    tmp = tmp_path_factory.mktemp("quiet")
    settings = Settings(home=tmp / "home", data_roots=[tmp / "data"], auth_token=BROWSER_TOKEN)
    app = create_app(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]), run_scheduler=False)
    ctx = app.state.ctx
    dataset = ctx.manager.create("dataset", "four colours", {"name": "four colours"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done", summary={"classes": ["red", "green", "blue", "grey"]})
    runs = {name: add_run(ctx, dataset.id, name, 0.01, [accuracy]) for name, accuracy in
            (("at chance", 25.5), ("half way", 60.0), ("learnt", 97.0))}
    for name, run in runs.items():
        best = ctx.store.get_job(run).summary or {}
        ctx.store.update_job(run, summary={**best, "epoch": 1, "best": {"epoch": 1, "val_accuracy": {
            "at chance": 25.5, "half way": 60.0, "learnt": 97.0}[name]}})
    runs["busy"] = add_run(ctx, dataset.id, "busy", 0.01, [40.0], status="running")
    with serving(app) as url:
        yield SimpleNamespace(url=url, ctx=ctx, runs=runs)


def test_best_accuracy_is_coloured_by_how_far_above_chance(quiet, page):
    page.goto(quiet.url + "/")
    colour = {name: page.locator(f'tr[data-job="{run}"] td.best strong').evaluate("e => getComputedStyle(e).color")
              for name, run in quiet.runs.items() if name != "busy"}
    green = "rgb(31, 138, 76)"  # --ok
    assert colour["learnt"] == green
    assert colour["at chance"] != green and colour["half way"] != green and colour["at chance"] != colour["half way"]
    title = page.locator(f'tr[data-job="{quiet.runs["at chance"]}"] td.best strong').get_attribute("title")
    assert title == "chance is 25.0% with 4 classes"


def test_compare_selected_is_announced_enabled_once_two_models_are_ticked(quiet, page):
    page.goto(quiet.url + "/")
    compare = page.locator("#compare-selected")
    assert compare.get_attribute("aria-disabled") == "true"
    page.check(f'.job-select[value="{quiet.runs["learnt"]}"]')
    page.check(f'.job-select[value="{quiet.runs["half way"]}"]')
    assert compare.is_visible() and compare.get_attribute("aria-disabled") == "false"


def test_abort_asks_first_on_the_job_page_and_the_home_list(quiet, page):
    aborted, asked = [], []
    page.route("**/api/jobs/*/abort", lambda route: (aborted.append(route.request.url),
                                                     route.fulfill(status=409, body='{"detail": "kept"}')))

    def answer(dialog, accept):
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    busy = quiet.runs["busy"]
    page.goto(f"{quiet.url}/models/{busy}")
    page.once("dialog", lambda d: answer(d, False))
    page.click("#abort-button")
    page.wait_for_timeout(500)
    assert asked == ["Abort busy? It stops at once; Resume continues it later."] and aborted == []
    page.once("dialog", lambda d: answer(d, True))
    page.click("#abort-button")
    page.wait_for_function("document.getElementById('job-error').textContent.length > 0")
    assert len(aborted) == 1 and busy in aborted[0]

    page.goto(quiet.url + "/")
    page.check(f'.job-select[value="{busy}"]')
    page.once("dialog", lambda d: answer(d, False))
    page.click("#abort-selected")
    page.wait_for_timeout(500)
    assert asked[-1] == "Abort 1 job(s)? They stop at once; Resume continues them later." and len(aborted) == 1


def test_classify_with_visualizations_fits_a_phone(trained_server, phone, tmp_path):
    image = tmp_path / "red sample.png"
    colour_image("red", 77, size=(64, 48)).save(image)
    phone.goto(f"{trained_server.url}/models/{trained_server.trained.model_id}/classify")
    phone.set_input_files("#one-file", str(image))
    assert phone.is_checked("#one-visualize")
    phone.click("#one-button")
    phone.wait_for_selector("#one-layers tbody tr >> nth=5")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    phone.screenshot(path=str(SCREENSHOTS / "classify-390.png"), full_page=True)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_system_page_gives_versions_who_holds_each_slot_and_free_disk(quiet, page):
    from importlib import metadata

    busy = quiet.runs["busy"]
    assert quiet.ctx.store.try_lease(busy, ["cpu:0"])
    try:
        page.goto(quiet.url + "/system")
        row = page.locator("#system-devices tbody tr", has_text="CPU training slot 1")
        row.locator("a").wait_for()
        assert row.locator("a").inner_text() == "busy" and row.locator("a").get_attribute("href") == f"/models/{busy}"
        assert "free" in page.locator("#system-devices tbody tr", has_text="Dataset build slot 1").inner_text()
        versions = page.inner_text("#system-versions")
        for package in ("torch", "torchvision"):
            assert f"{package} {metadata.version(package)}" in versions
        assert "trainyard " in versions and "python 3." in versions
        disk = page.inner_text("#system-disk")
        assert "GiB free of" in disk and str(quiet.ctx.settings.home) in disk
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "system-1280.png"), full_page=True)
    finally:
        quiet.ctx.store.release(busy)


def test_timm_search_fills_every_column_and_says_when_nothing_matches(quiet, page):
    page.goto(f"{quiet.url}/models/new")
    page.fill("#timm-search", "test_resnet")
    row = page.locator("#timm-results tr[data-network='timm:test_resnet']")
    row.wait_for(timeout=120_000)  # the first search imports timm: many seconds on a loaded machine
    assert re.fullmatch(r"\d+×\d+", row.locator("td").nth(2).inner_text())  # at once, from timm's configuration
    row.locator("td.params").filter(has_text=re.compile(r"^\d{1,3}(,\d{3})+$")).wait_for(timeout=120_000)  # unticked
    assert not row.locator("input[type=checkbox]").is_checked()
    assert page.is_hidden("#timm-none")
    page.fill("#timm-search", "no such network zzq")
    page.locator("#timm-none").filter(has_text="No timm network matches “no such network zzq”").wait_for()
    assert page.is_hidden("#timm-results")


@pytest.mark.parametrize("width", [1280, 390])
def test_a_bad_address_shows_a_page_with_a_way_back_and_sweeps_are_listed(quiet, new_page, width):
    context, page, errors = new_page({"width": width, "height": 900})
    try:
        page.goto(f"{quiet.url}/models/no-such-model")
        assert page.inner_text("h1") == "Not found"
        assert page.inner_text("#error-message") == "No model with id 'no-such-model'."
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"error-{width}.png"), full_page=True)
        page.click("#error-back")
        page.wait_for_url(f"{quiet.url}/")
        page.click("header a[href='/sweeps']")
        page.wait_for_url("**/sweeps")
        row = page.locator("#sweeps-table tr[data-sweep='sweep']")
        assert "97.00%" in row.inner_text() and "4" in row.locator("td").nth(1).inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(SCREENSHOTS / f"sweeps-{width}.png"), full_page=True)
        row.locator("a", has_text="sweep").first.click()
        page.wait_for_url("**/sweeps?group=sweep")
    finally:
        context.close()
    assert errors == []
