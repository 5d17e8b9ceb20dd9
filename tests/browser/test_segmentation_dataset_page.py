"""A segmentation dataset made through the form's segmentation tab; its page's pixel shares and
the explorer showing each image with its mask laid over it, in a real browser."""

from __future__ import annotations

import re

import pytest

from tests.segmentation_data import CLASSES, make_segmentation_set

pytestmark = pytest.mark.browser


def test_segmentation_dataset_through_the_form_and_its_overlays(live_server, page, tmp_path):
    images, masks = make_segmentation_set(live_server.settings.data_roots[0] / "seg", 8, size=48)
    page.goto(live_server.url + "/datasets/new")
    page.click("button[data-tab=segmentation]")
    page.fill("input[name=name]", "browser masks")
    page.fill("input[name=seg_train_folder]", str(images))
    page.fill("input[name=seg_train_labels]", str(masks))
    page.fill("input[name=seg_classes]", ",".join(CLASSES))
    page.fill("input[name=width]", "32")
    page.fill("input[name=height]", "32")
    page.select_option("select[name=resize]", "crop")  # the panel keeps masks squashed all the same
    page.fill("input[name=val_percent]", "0")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/datasets/(?!new$)[\w-]+$"))

    page.locator("#pixel-shares").wait_for(timeout=60_000)  # the page reloads when the build ends
    assert page.locator("#pixel-shares tbody tr").count() == len(CLASSES)
    assert page.locator("#explore-legend .mask-class").count() == len(CLASSES)
    page.wait_for_function("document.querySelectorAll('#explore-grid figure').length === 8")
    page.wait_for_function("[...document.querySelectorAll('#explore-grid img')]"
                           ".every((img) => img.complete && img.naturalWidth === 32)")
    sources = page.locator("#explore-grid img").evaluate_all("(imgs) => imgs.map((img) => img.src)")
    assert all(src.endswith("/overlay.png") for src in sources)
    captions = page.locator("#explore-grid figcaption").all_inner_texts()
    assert "background, square, disc" in captions
    page.screenshot(path=str(tmp_path / "segmentation-page.png"), full_page=True)
