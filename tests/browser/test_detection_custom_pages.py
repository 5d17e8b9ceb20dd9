"""A custom detector in Debian's chromium: the editor starts from the detection template on a
detection dataset and Visualize draws it (or names the wrong layer's line), and the Detect page
shows the backbone's layers with their weights, activations and statistics."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from tests.detection_data import draw_image, shapes_truth
from tests.detection_model import CLASSES, CUSTOM_SIZE, custom_detector
from tests.live_server import BROWSER_TOKEN, serving
from trainyard.jobs.scheduling.resources import Pools

pytestmark = [pytest.mark.browser, pytest.mark.slow]
EDITOR = "document.querySelector('.CodeMirror').CodeMirror"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The real app over the session's custom detector's home (its dataset and its model)."""
    from trainyard.web.app import create_app

    custom = custom_detector(tmp_path_factory)
    settings = custom.settings.model_copy(update={"auth_token": BROWSER_TOKEN})
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    with serving(app) as url:
        yield SimpleNamespace(url=url, custom=custom, app=app)


def test_the_editor_starts_a_detector_from_the_template_and_visualizes_it(server, page):
    page.goto(f"{server.url}/models/new")
    page.click("button[data-tab=custom]")
    assert page.is_checked(f"#ds-{server.custom.dataset_id}")  # the latest dataset, a detection one
    page.wait_for_function(f"{EDITOR}.getValue().includes('FasterRCNN(')")
    page.uncheck(f"#ds-{server.custom.dataset_id}")  # no dataset: the classifier example again
    page.wait_for_function(f"!{EDITOR}.getValue().includes('FasterRCNN(')")
    page.check(f"#ds-{server.custom.dataset_id}")
    page.wait_for_function(f"{EDITOR}.getValue().includes('FasterRCNN(')")
    page.click("#visualize-custom")
    page.locator("#network-diagram .nv-layer").first.wait_for(timeout=300_000)
    assert f"3×{CUSTOM_SIZE}×{CUSTOM_SIZE}" in page.inner_text("#network-view-title")
    assert page.locator("#network-diagram [data-layer='backbone.0']").count() == 1

    source = page.evaluate(f"{EDITOR}.getValue()").replace("nn.Conv2d(32, 64, 3", "nn.Conv2d(24, 64, 3")
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "nn.Conv2d(24, 64, 3" in text)
    page.evaluate(f"src => {EDITOR}.setValue(src)", source)
    page.click("#visualize-custom")
    page.locator("#network-error").filter(has_text=f"Line {line}").wait_for(timeout=300_000)
    assert "layer 'backbone.3' (Conv2d) expects 24 input channels, gets 32" in page.inner_text("#network-error")
    assert page.locator(".CodeMirror .cm-error-line").count() == 1
    page.uncheck(f"#ds-{server.custom.dataset_id}")  # an edited file stays as the user left it
    page.wait_for_timeout(500)
    assert "nn.Conv2d(24, 64, 3" in page.evaluate(f"{EDITOR}.getValue()")


def test_the_detect_page_shows_the_backbone_layers(server, page, tmp_path):
    path = tmp_path / "shapes.png"
    shapes = shapes_truth(3, (CUSTOM_SIZE, CUSTOM_SIZE), tuple(CLASSES), seed=8)[2]
    Image.fromarray(draw_image(shapes, (CUSTOM_SIZE, CUSTOM_SIZE), tuple(CLASSES), np.random.default_rng(2))).save(path)
    page.goto(f"{server.url}/models/{server.custom.model_id}/classify")
    page.set_input_files("#one-file", str(path))
    page.check("#one-visualize")
    page.click("#one-button")
    page.wait_for_selector("#one-layers tbody tr >> nth=3", timeout=300_000)
    assert page.is_visible("#one-canvas")  # the image with its boxes, as without the views
    rows = page.locator("#one-layers tbody tr")
    assert "input" in rows.nth(0).inner_text()
    first = rows.nth(1).inner_text()
    assert "backbone.0" in first and "Conv2d" in first and "896 params" in first  # 3x3x3x32 + 32
    assert rows.nth(1).locator("img.mosaic").count() == 2  # its filters and its feature maps
    assert rows.nth(1).locator("svg.histogram").count() == 2 and "mean" in first and "std" in first
    assert all(text.split("\n")[0].startswith(("input", "backbone.")) for text in rows.all_inner_texts())


def test_the_form_lists_what_trains_on_the_dataset_chosen(server, page):
    """Issue 46.9: choosing another dataset re-filters the networks and re-greys the previous
    models (model_start.js, network_table.js); the server drew them for the first one."""
    from tests.web.test_pages_models import add_dataset

    digits = add_dataset(server.app.state.ctx, "digits-for-the-form")  # a classification dataset
    page.goto(f"{server.url}/models/new?dataset={digits.id}")
    detector = page.locator("#previous-job option", has_text="detector")
    assert page.is_visible("tr[data-network=lenet]") and page.is_hidden("tr[data-network=yolo_n]")
    assert detector.is_disabled() and detector.inner_text().endswith(": a detector")
    page.uncheck(f"#ds-{digits.id}")
    page.check(f"#ds-{server.custom.dataset_id}")
    assert page.is_hidden("tr[data-network=lenet]") and page.is_visible("tr[data-network=yolo_n]")
    assert not detector.is_disabled() and not detector.inner_text().endswith(": a detector")
    assert page.eval_on_selector("#timm-head", "s => s.value") == "fasterrcnn"  # a detector's backbone
    page.check("input[name=start][value=previous]")
    assert page.is_hidden("#network-choice") and page.is_visible("#network-of-weights")
    page.select_option("#previous-job", value=detector.get_attribute("value"))
    assert "Creates 1 job" in page.inner_text("#sweep-count")
