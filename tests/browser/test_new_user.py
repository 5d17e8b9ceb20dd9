"""The pages as a new user meets them (issue 15), in Debian's chromium with the network to
anything but the server blocked: offline API docs, the new-model form's defaults and its checks
before a job is queued, phones, result pages without a reload, a failed job's actions, the log.

One server over the session's shared trained model (a 28x28 RGB dataset of 3 colours, LeNet).
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from pathlib import Path

import pytest

from tests.live_server import BROWSER_HEADERS
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.leases import this_process

pytestmark = pytest.mark.browser

SYNTAX_ERROR = "from torch import nn\n\n\ndef build(num_classes, in_channels, image_size)\n    return nn.Flatten()\n"
SHAPE_MISMATCH = """from torch import nn


def build(num_classes, in_channels, image_size):
    net = nn.Sequential()
    net.add_module("features", nn.Sequential(nn.Conv2d(in_channels, 16, 3, padding=1), nn.ReLU()))
    net.add_module("classifier", nn.Sequential(nn.Flatten(), nn.Linear(123, num_classes)))
    return net
"""


def api(url: str, method: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **BROWSER_HEADERS})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def wait_status(url: str, job_id: str, wanted: set[str], timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api(url, "GET", f"/api/jobs/{job_id}")
        if job["status"] in wanted:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} never reached {wanted}")


def test_api_docs_render_offline_with_a_favicon(trained_server, page):
    page.goto(trained_server.url + "/docs")
    page.locator(".opblock").first.wait_for()
    assert page.locator(".opblock").count() > 20  # every API operation is listed
    assert "/api/models" in page.inner_text("#swagger-ui")
    assert not [u for u in page.blocked if "swagger" in u or "jsdelivr" in u]
    assert page.request.get(trained_server.url + "/favicon.ico").status == 200


def test_new_model_selects_the_dataset_and_refuses_bad_networks_at_their_field(trained_server, page):
    trained = trained_server.trained
    page.goto(trained_server.url + "/models/new")
    assert page.is_checked(f"#ds-{trained.dataset_id}")  # the only dataset: chosen already
    # Parameter counts for this dataset (3 classes, 3 channels), as Visualize counts them.
    page.locator("#params-for").filter(has_text="3 classes, 3 channels").wait_for()
    # AlexNet wants 227x227; the dataset gives 28x28: said beside it, before anything is created.
    assert "needs at least 63×63" in page.inner_text("tr[data-network=alexnet] .size-warning")

    # The LR preview counts optimizer steps as the training of these very settings did.
    log_request = urllib.request.Request(f"{trained_server.url}/api/jobs/{trained.model_id}/log",
                                         headers=BROWSER_HEADERS)
    with urllib.request.urlopen(log_request, timeout=30) as response:
        batch, steps = re.search(r"batches of (\d+), (\d+) iterations", response.read().decode()).groups()
    epochs = api(trained_server.url, "GET", f"/api/models/{trained.model_id}")["spec"]["epochs"]
    page.check("#net-lenet")
    page.fill("input[name=epochs]", f"{epochs:g}")
    page.fill("input[name=batch_size]", batch)
    page.locator("#lr-preview-note").filter(has_text=f"{steps} iterations in all").wait_for()
    page.uncheck("#net-lenet")

    page.fill("input[name=name]", "refused")
    page.click("#create-button")  # no network chosen: the error is at the network, in view
    error = page.locator("#network-fieldset .field-error")
    error.filter(has_text="Choose a network.").wait_for()
    assert error.is_visible() and in_viewport(page, "#network-fieldset .field-error")

    page.check("#net-alexnet")
    assert page.locator("#network-fieldset .field-error").count() == 0  # cleared by the change
    page.click("#create-button")
    error.filter(has_text="needs images of at least 63x63").wait_for()

    page.uncheck("#net-alexnet")
    page.click("button[data-tab=custom]")
    width, height = api(trained_server.url, "GET", f"/api/datasets/{trained.dataset_id}")["image_size"]
    flat = 16 * width * height  # the 16 feature maps of SHAPE_MISMATCH, flattened
    layer_error = f"line 7: layer 'classifier.1' (Linear) expects 123 inputs, gets {flat}"
    for source, expected in ((SYNTAX_ERROR, "line 4: SyntaxError"), (SHAPE_MISMATCH, layer_error)):
        page.evaluate("src => document.querySelector('.CodeMirror').CodeMirror.setValue(src)", source)
        page.click("#create-button")
        error.filter(has_text=expected).wait_for(timeout=90_000)
        assert in_viewport(page, "#network-fieldset .field-error")
    # A layer error marks the line that made the layer (issue 31.9), the one to change.
    assert page.locator(".CodeMirror .cm-error-line").count() == 1
    line_7 = page.evaluate("() => document.querySelector('.CodeMirror').CodeMirror.lineInfo(6).bgClass")
    assert "cm-error-line" in line_7
    assert not any(j["name"] == "refused" for j in api(trained_server.url, "GET", "/api/models")["models"])


def in_viewport(page, selector: str) -> bool:
    return page.eval_on_selector(selector, """el => { const r = el.getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight; }""")


def test_the_model_page_logs_each_epoch_and_keeps_ended_figures_still(trained_server, page):
    trained = trained_server.trained
    page.goto(f"{trained_server.url}/models/{trained.model_id}")
    page.locator("#job-log").filter(has_text="finished 3 epochs").wait_for()
    log = page.inner_text("#job-log")
    assert len(re.findall(r"epoch \d/3: train loss [\d.]+, val loss [\d.]+, val accuracy [\d.]+ %, LR 0.02, "
                          r"[\d,]+ images/s, [\d.]+ s", log)) == 3
    assert "The job has ended" in page.inner_text("#hardware")
    page.wait_for_timeout(2000)  # a poll later: still no live figures
    assert page.locator("#hw-cpu-percent").count() == 0
    timeline = page.inner_text("#timeline-table")
    assert "running" in timeline and "done" in timeline and "Run time:" in page.inner_text("#run-time")
    groups = page.locator(".settings-group h3").all_inner_texts()
    assert groups[:4] == ["Data", "Network", "Solver", "Augmentation"]
    assert "Base learning rate" in page.inner_text("#settings") and "{" not in page.inner_text("#settings")


def test_a_failed_job_offers_clone_and_edit_not_classify_or_resume(trained_server, page):
    trained = trained_server.trained
    ctx = open_context(trained.settings)
    spec = {"name": "digits-lenet", "dataset_id": trained.dataset_id, "dataset_dir": "/nowhere", "network": "lenet"}
    job = ctx.manager.create("model", "digits-lenet", spec, needs={"pool": "cpu"}, parent_id=trained.dataset_id)
    ctx.store.update_job(job.id, status="failed", error="failed at start-up")
    page.goto(f"{trained_server.url}/models/{job.id}")
    assert page.is_hidden("#classify-link") and page.is_hidden("#resume-button")
    clone = page.locator("#clone-button")
    assert clone.inner_text() == "Clone and edit" and "secondary" not in clone.get_attribute("class")
    clone.click()
    page.wait_for_url(re.compile(rf"/models/new\?clone={job.id}$"))
    assert page.input_value("input[name=name]") == "digits-lenet-2"
    ctx.manager.delete(job.id)


def test_result_pages_draw_their_results_without_a_reload(trained_server, new_page):
    url, trained = trained_server.url, trained_server.trained
    # The one inference slot is held here (inference no longer waits behind training), so the
    # result jobs wait until their pages are open; deleting the holder frees it.
    ctx = open_context(trained.settings)
    blocker = ctx.manager.create("model", "slot-holder", {"name": "slot-holder"}, needs={"pool": "inference"})
    assert ctx.store.try_lease(blocker.id, ["inference:0"], holder=this_process())
    evaluation = api(url, "POST", f"/api/models/{trained.model_id}/evaluate", {"split": "val"})
    many = api(url, "POST", f"/api/models/{trained.model_id}/classify-many", {"split": "val"})
    pages = []
    for doc in (evaluation, many):
        context, page, errors = new_page()
        page.goto(url + doc["page"])
        assert page.get_attribute(".job-header", "data-status") in ("queued", "waiting")
        page.evaluate("window.notReloaded = true")
        pages.append((context, page, errors))
    ctx.manager.delete(blocker.id)  # frees the slot
    (_, eval_page, _), (_, many_page, _) = pages
    eval_page.wait_for_selector("#eval-result:not([hidden])", timeout=120_000)
    assert eval_page.locator("table.confusion tr").count() == 1 + len(trained.classes)
    many_page.wait_for_selector("#many-summary:not([hidden])", timeout=120_000)
    many_page.locator("#results-table tbody tr").first.wait_for()
    # Issue 22: each row has its image's thumbnail (DIGITS had them)
    thumb = many_page.locator("#results-table tbody tr img.thumb").first
    many_page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=thumb.element_handle())
    assert many_page.locator("#results-table tbody tr img.thumb").count() == many_page.locator(
        "#results-table tbody tr").count()
    for context, page, errors in pages:
        assert page.evaluate("window.notReloaded === true")  # drawn in place
        assert page.inner_text("#job-status") == "done" and page.is_hidden("#abort-button")
        context.close()
        assert errors == []
    TRACE["evaluation"] = evaluation["page"]


TRACE: dict[str, str] = {}


def test_every_page_fits_a_phone(trained_server, phone):
    url, trained = trained_server.url, trained_server.trained
    evaluation = TRACE.get("evaluation") or api(url, "POST", f"/api/models/{trained.model_id}/evaluate")["page"]
    pages = ["/", f"/datasets/{trained.dataset_id}", "/datasets/new", "/models/new", f"/models/{trained.model_id}",
             f"/models/{trained.model_id}/classify", evaluation]
    wide = {}
    for path in pages:
        phone.goto(url + path)
        phone.wait_for_load_state("networkidle")
        width = phone.evaluate("document.documentElement.scrollWidth")
        if os.environ.get("TRAINYARD_SCREENSHOTS"):  # to look at them: TRAINYARD_SCREENSHOTS=DIR
            name = re.sub(r"\W+", "_", path.strip("/")) or "home"
            phone.screenshot(path=str(Path(os.environ["TRAINYARD_SCREENSHOTS"]) / f"phone_{name}.png"), full_page=True)
        if width > 390:
            wide[path] = width
    assert wide == {}, f"pages wider than the 390 px screen: {wide}"
