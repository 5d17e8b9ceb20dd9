"""The compare page in a phone-sized browser: one chart line per run, a table that sorts, no
sideways scrolling of the page itself."""

from __future__ import annotations

import pytest

from tests.web.test_compare import add_run
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools

pytestmark = pytest.mark.browser


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
    assert phone.locator("#compare-table th.differs").all_inner_texts() == ["epochs", "lr.base_lr"]
    assert phone.locator("#compare-error").inner_text() == ""


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
    page.click("#create-button")
    page.wait_for_url("**/?group=sweep", timeout=180_000)  # after the real network check, slow on a loaded machine
    body = sent[0]
    assert body["lr_range"] == [1e-4, 1e-1] and body["batch_size_range"] == [16, 128]
    assert body["trials"] == 5 and body["early_stop"] is True
    assert body["base_lrs"] == [] and body["batch_sizes"] == []
