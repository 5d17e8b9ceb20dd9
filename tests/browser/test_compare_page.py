"""The compare page in a phone-sized browser: one chart line per run, a table that sorts, no
sideways scrolling of the page itself."""

from __future__ import annotations

import pytest

from tests.web.test_compare import add_run
from trainyard.jobs.context import open_context
from trainyard.jobs.resources import Pools

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
