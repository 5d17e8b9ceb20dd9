"""The weights page and the new-model form's timm search and pretrained-networks tab, in chromium."""

from __future__ import annotations

import json
import re
import time

import pytest
import torch

from tests.live_server import api
from trainyard.networks import create_network

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def dataset(live_server) -> dict:
    job = api(live_server, "POST", "/api/datasets", {"name": "grey", "train_folder": str(live_server.folder),
                                                     "width": 28, "height": 28, "channels": 1})
    deadline = time.monotonic() + 90
    while job["status"] not in ("done", "failed", "aborted") and time.monotonic() < deadline:
        time.sleep(0.2)
        job = api(live_server, "GET", f"/api/jobs/{job['id']}")
    assert job["status"] == "done", job
    return job


def test_import_on_the_weights_page(live_server, page, tmp_path):
    weights = tmp_path / "lenet.pt"
    torch.save(create_network("lenet", 2, 1, 28).state_dict(), weights)
    page.goto(f"{live_server.url}/weights")
    page.fill("#weights-search", "resnet18.imagenet1k")
    page.locator("#weights-table tr[data-name='resnet18.imagenet1k_v1']").wait_for()
    assert "69.8%" in page.inner_text("#weights-table tr[data-name='resnet18.imagenet1k_v1']")
    page.fill("#weights-import input[name=name]", "grey-lenet")
    page.fill("#weights-import input[name=network]", "lenet")
    page.set_input_files("#weights-import input[name=file]", str(weights))
    page.click("#weights-import button[type=submit]")
    row = page.locator("#weights-table tr[data-name='grey-lenet']")
    row.wait_for()
    assert "Remove" in row.inner_text() and "28x28" in row.inner_text()
    # Issue 22: your own entry is the first of the whole list, which the server pages
    page.fill("#weights-search", "")
    page.locator("#weights-count").filter(has_text=re.compile(r"^1–50 of \d{4}")).wait_for()
    assert page.locator("#weights-table tbody tr").first.get_attribute("data-name") == "grey-lenet"
    assert page.locator("#weights-table tbody tr").count() == 50 and page.is_disabled("#weights-prev")
    page.click("#weights-next")
    page.locator("#weights-count").filter(has_text=re.compile(r"^51–100 of ")).wait_for()
    assert page.locator("#weights-table tr[data-name='grey-lenet']").count() == 0


def test_form_finds_timm_networks_and_fine_tunes_from_the_store(live_server, dataset, page):
    page.goto(f"{live_server.url}/models/new?dataset={dataset['id']}")
    page.fill("#timm-search", "test_resnet")
    row = page.locator("#timm-results tr[data-network='timm:test_resnet']")
    row.wait_for()
    for ticked in page.locator("input[name=network]:checked").all():  # the dataset's recommended network
        ticked.uncheck()
    row.locator("input[type=checkbox]").check()
    row.locator("td.params").filter(has_text=re.compile(r"\d{3},\d{3}")).wait_for()  # counted on demand
    page.locator("#sweep-count").filter(has_text="Creates 1 job").wait_for()

    page.check("input[name=start][value=store]")  # the one "Start from" control (issue 46.9)
    assert page.locator("#network-choice").is_hidden()  # the weights bring their network
    page.locator("#store-entries input[value='grey-lenet']").check()
    page.fill("input[name=name]", "from the store")
    page.fill("input[name=epochs]", "1")
    page.fill("input[name=backbone_lr_mult]", "0.1")
    page.click("#create-button")
    page.wait_for_url(re.compile(r"/models/[\w-]+$"))
    job_id = page.url.rsplit("/", 1)[1]
    spec = json.loads((live_server.settings.jobs_dir / job_id / "spec.json").read_text())
    assert spec["network"] == "lenet" and spec["pretrained_entry"] == "grey-lenet"
    assert spec["backbone_lr_mult"] == 0.1


def test_the_owner_shares_weights_from_the_page_and_another_member_sees_no_control(live_server, page, browser,
                                                                                  tmp_path):
    from trainyard.jobs.accounts import users

    weights = tmp_path / "lenet.pt"
    torch.save(create_network("lenet", 2, 1, 28).state_dict(), weights)
    page.goto(f"{live_server.url}/weights")
    page.fill("#weights-import input[name=name]", "shared-lenet")
    page.fill("#weights-import input[name=network]", "lenet")
    page.set_input_files("#weights-import input[name=file]", str(weights))
    page.click("#weights-import button[type=submit]")
    control = page.locator("#weights-table tr[data-name='shared-lenet'] select.weights-visibility")
    control.wait_for()
    assert control.input_value() == "private"
    control.evaluate("select => { select.dataset.before = 'yes'; }")
    with page.expect_response(lambda response: response.request.method == "PATCH") as patched:
        control.select_option("team")
    assert patched.value.ok
    # the row is drawn again from the answer
    page.locator("#weights-table tr[data-name='shared-lenet'] select.weights-visibility:not([data-before])").wait_for()
    assert control.input_value() == "team"
    stored = api(live_server, "GET", "/api/weights/shared-lenet")
    assert stored["visibility"] == "team"
    owner = stored["owner"]

    store = live_server.app.state.ctx.store
    users.add_user(store, "bob", "member")
    context = browser.new_context(bypass_csp=True,
                                  extra_http_headers={"Authorization": f"Bearer {users.new_token(store, 'bob', 't')}"})
    try:
        other = context.new_page()
        other.goto(f"{live_server.url}/weights")
        other.fill("#weights-search", "shared-lenet")
        row = other.locator("#weights-table tr[data-name='shared-lenet']")
        row.wait_for()
        assert f"{owner} · team" in row.inner_text()
        assert row.locator("select").count() == 0
    finally:
        context.close()
