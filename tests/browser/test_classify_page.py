"""The classify page in Debian's chromium: one image with visualizations, then an evaluation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.trained_model import CROP, colour_image

pytestmark = pytest.mark.browser
SCREENSHOTS = Path(os.environ.get("TRAINYARD_SCREENSHOTS", "/tmp/trainyard-screenshots"))


@pytest.fixture(scope="module")
def server(trained_server):
    """The session's one server over the shared trained model (tests/browser/conftest.py)."""
    return trained_server.url, trained_server.trained


def test_classify_one_image_with_visualizations(server, page, tmp_path):
    url, trained = server
    image = tmp_path / "red sample.png"
    colour_image("red", 77, size=(64, 48)).save(image)
    page.goto(f"{url}/models/{trained.model_id}/classify")
    page.set_input_files("#one-file", str(image))
    assert page.is_checked("#one-visualize")
    page.click("#one-button")
    page.wait_for_selector("#one-layers tbody tr >> nth=5")
    assert page.inner_text("#one-predictions tr >> nth=0").startswith("red")
    rows = page.locator("#one-layers tbody tr")
    assert rows.count() == 10  # the input and LeNet's 9 layers
    first_conv = rows.nth(1).inner_text()
    assert "features.0" in first_conv and "Conv2d" in first_conv and "1,520 params" in first_conv
    assert rows.nth(1).locator("img.mosaic").count() == 2  # filters and feature maps
    assert rows.nth(7).locator("img.mosaic").count() == 0  # a fully-connected layer: statistics only
    assert rows.nth(7).locator("svg.histogram").count() == 2
    assert page.is_visible("#one-saliency") and "Grad-CAM" in page.inner_text("#one-saliency-caption")
    assert page.evaluate("document.getElementById('one-input').naturalWidth") == CROP
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "classify.png"), full_page=True)


def test_a_bad_file_shows_the_error(server, page, tmp_path):
    url, trained = server
    bad = tmp_path / "notes.txt"
    bad.write_text("not an image")
    page.goto(f"{url}/models/{trained.model_id}/classify")
    page.set_input_files("#one-file", str(bad))
    page.click("#one-button")
    page.wait_for_function("document.getElementById('one-error').textContent.length > 0")
    assert "not a usable image" in page.inner_text("#one-error")


def test_evaluate_from_the_page(server, page):
    url, trained = server
    page.goto(f"{url}/models/{trained.model_id}/classify")
    page.click("#evaluate-button")
    page.wait_for_url("**/evaluations/**")
    page.wait_for_selector("#eval-result:not([hidden])", timeout=90_000)
    assert "Accuracy" in page.inner_text("#eval-metrics")
    assert page.locator("table.confusion tr").count() == 1 + len(trained.classes)
    page.screenshot(path=str(SCREENSHOTS / "evaluation.png"), full_page=True)
