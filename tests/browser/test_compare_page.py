"""The compare page in a phone-sized browser: one chart line per run, a table that sorts, no
sideways scrolling of the page itself."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image

from tests.web.test_compare import add_run
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools
from trainyard.jobs.store.labels import set_labels

pytestmark = pytest.mark.browser
SCREENSHOTS = Path(os.environ.get("TRAINYARD_SCREENSHOTS", "/tmp/trainyard-screenshots"))


def test_compare_reads_at_390_px_and_sorts_by_a_column(live_server, phone):
    ctx = open_context(live_server.settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]))
    dataset = ctx.manager.create("dataset", "d", {"name": "d"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done")
    ids = [add_run(ctx, dataset.id, "a run with a rather long name", 0.1, [40.0, 70.0, 80.0]),
           add_run(ctx, dataset.id, "b", 0.01, [55.0, 95.0]),
           add_run(ctx, dataset.id, "c", 1e-5, [10.0])]
    phone.goto(f"{live_server.url}/compare?ids={','.join(ids)}")
    phone.wait_for_selector("#chart-val_accuracy canvas")
    assert phone.locator(".chart canvas").count() == 3  # accuracy, loss and LR, each drawn
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    assert phone.locator("#chart-train_loss canvas").bounding_box()["width"] <= 390
    assert phone.locator("#compare-legend > span").all_inner_texts() == ["a run with a rather long name", "b", "c"]

    best = phone.locator("#compare-table th", has_text="Best val. accuracy")
    best.click()
    order = phone.locator("#compare-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.job)")
    assert order == [ids[2], ids[0], ids[1]]  # 10 %, 80 %, 95 %
    best.click()
    order = phone.locator("#compare-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.job)")
    assert order == [ids[1], ids[0], ids[2]]
    assert phone.locator("#compare-table th.differs").all_inner_texts() == ["Training epochs", "Base learning rate"]
    assert phone.locator("#compare-error").inner_text() == ""


def test_compare_at_1280_px_reads_like_the_job_page(live_server, page):
    """One line per run name, the job page's labels over the settings, a table that stays inside
    its card, and a log LR axis whose labels are whole (issue 31.6)."""
    ctx = open_context(live_server.settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]))
    dataset = ctx.manager.create("dataset", "digits-web", {"name": "digits-web"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done")
    ids = [add_run(ctx, dataset.id, f"digits-web lenet lr={lr} bs=16 tried on {n} epochs", lr, [30.0 + n] * n)
           for n, lr in ((2, 0.1), (3, 0.001), (4, 1e-5))]
    set_labels(ctx.store, ids[0], notes="too high: diverges after epoch 2")
    page.goto(f"{live_server.url}/compare?ids={','.join(ids)}")
    page.wait_for_selector("#chart-lr canvas")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "compare-1280.png"), full_page=True)
    assert page.locator("#compare-table th.differs").all_inner_texts() == ["Training epochs", "Base learning rate"]
    line = page.locator("#compare-table tbody tr").first.locator("td.run-name a").bounding_box()["height"]
    for name in page.locator("#compare-table td.run-name a").all():
        assert name.bounding_box()["height"] <= line * 1.2  # each name on one line
    assert "too high: diverges after epoch 2" in page.locator(f'tr[data-job="{ids[0]}"]').inner_text()
    card = page.locator("#compare-table").locator("xpath=ancestor::section").bounding_box()
    scroller = page.locator("#compare-table").locator("xpath=..").bounding_box()
    assert scroller["x"] + scroller["width"] <= card["x"] + card["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.locator("#settings-table").locator("xpath=ancestor::details").locator("summary").click()
    assert "Base learning rate" in page.locator("#settings-table").inner_text()
    # The LR axis' widest label (0.00001) is drawn whole: no ink in the canvas' first columns.
    axis = Image.open(io.BytesIO(page.locator("#chart-lr canvas").first.screenshot())).convert("L")
    edge = [axis.getpixel((x, y)) for x in range(3) for y in range(axis.height)]
    assert min(edge) > 160, "the LR axis labels are cut at the chart's left edge"


def test_the_new_model_form_sends_ranges_trials_and_early_stop(live_server, page):
    ctx = open_context(live_server.settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]))
    dataset = ctx.manager.create("dataset", "form data", {"name": "form data"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done", summary={"classes": ["a", "b"], "width": 28, "height": 28,
                                                            "channels": 1})
    sent = []

    def answer(route):  # what the form sends, answered without queueing anything
        sent.append(route.request.post_data_json)
        route.fulfill(status=201, content_type="application/json", body='{"jobs": []}')

    page.route("**/api/models", answer)
    page.goto(f"{live_server.url}/models/new?dataset={dataset.id}")
    page.check("#net-lenet")
    page.fill("input[name=name]", "search")
    page.fill("input[name=base_lr]", "1e-4..1e-1")
    page.fill("input[name=batch_size]", "16..128")
    page.fill("input[name=trials]", "5")
    page.check("input[name=early_stop]")
    page.locator("#sweep-count").filter(has_text="Creates 5 jobs").wait_for()
    # What is drawn, not "5 learning rates" when batch sizes are drawn too (issue 31.9)
    assert page.inner_text("#sweep-count") == "Creates 5 jobs: 5 trials (each draws a learning rate and a batch size)."
    page.fill("input[name=batch_size]", "32")
    page.locator("#sweep-count").filter(has_text="each draws a learning rate)").wait_for()
    page.fill("input[name=batch_size]", "16..128")
    page.click("#create-button")
    page.wait_for_url("**/?group=sweep", timeout=180_000)  # after the real network check, slow on a loaded machine
    body = sent[0]
    assert body["lr_range"] == [1e-4, 1e-1] and body["batch_size_range"] == [16, 128]
    assert body["trials"] == 5 and body["early_stop"] is True
    assert body["base_lrs"] == [] and body["batch_sizes"] == []
