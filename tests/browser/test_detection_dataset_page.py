"""A detection dataset made through the form's detection tab; its page's box stats and the
explorer drawing each image's boxes, in a real browser."""

from __future__ import annotations

import re

import pytest

from tests.detection_data import make_shapes_dataset, shapes_truth

pytestmark = pytest.mark.browser


def test_detection_dataset_through_the_form_and_its_explorer(live_server, page, tmp_path):
    images, labels = make_shapes_dataset(live_server.settings.data_roots[0] / "shapes", n_images=12,
                                         size=(120, 80), fmt="voc")
    page.goto(live_server.url + "/datasets/new")
    page.click("button[data-tab=detection]")
    page.fill("input[name=name]", "browser shapes")
    page.fill("input[name=det_train_folder]", str(images))
    page.fill("input[name=det_train_labels]", str(labels))
    page.fill("input[name=width]", "96")
    page.fill("input[name=height]", "64")
    page.fill("input[name=val_percent]", "0")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/datasets/(?!new$)[\w-]+$"))

    page.locator("#box-counts").wait_for(timeout=60_000)  # the page reloads when the build ends
    assert page.locator("#dataset-task").inner_text() == "detection, voc labels"
    n_boxes = sum(len(shapes) for shapes in shapes_truth(12, (120, 80)))
    bars = page.locator("#box-counts .bar").all_inner_texts()
    assert sum(int(b) for b in bars) == n_boxes
    assert page.locator("#box-size-histogram tr").count() >= 3

    # Every box of the page's images is drawn, labelled with its class name.
    page.wait_for_function("document.querySelectorAll('#explore-grid figure').length === 12")
    assert page.locator("#explore-grid rect.box").count() == n_boxes
    names = set(page.locator("#explore-grid svg text").all_text_contents())
    assert names == {"disc", "square"}
    captions = page.locator("#explore-grid figcaption").all_inner_texts()
    assert "no boxes" in captions  # image 0 has none and is kept
    page.select_option("#explore-class", "0")  # disc: only the images holding one
    page.wait_for_function("document.querySelectorAll('#explore-grid figure').length < 12")
    page.screenshot(path=str(tmp_path / "detection-page.png"), full_page=True)
