"""Creating a dataset through the form, then its page and explorer, in a real browser."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

pytestmark = pytest.mark.browser


def png_bytes(width: int, height: int) -> bytes:
    """A flat grey PNG: resized with "fill", its padding is noise, unlike the image itself."""
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (128, 128, 128)).save(buf, "PNG")
    return buf.getvalue()


def wait_for_preview(page, note: str, width: int, height: int, corner_is_noise: bool | None = None) -> None:
    page.wait_for_function(
        """([note, width, height]) => {
            const img = document.getElementById('resize-preview');
            return !img.hidden && img.complete && img.naturalWidth === width && img.naturalHeight === height
                && document.getElementById('preview-note').textContent.includes(note);
        }""", arg=[note, width, height])
    if corner_is_noise is not None:
        # The top-left pixel: noise padding when a wide grey image is filled, grey otherwise.
        corner = page.evaluate("""() => {
            const img = document.getElementById('resize-preview');
            const canvas = document.createElement('canvas');
            canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
            const g = canvas.getContext('2d');
            g.drawImage(img, 0, 0);
            return Array.from(g.getImageData(0, 0, 1, 1).data.slice(0, 3));
        }""")
        assert (corner != [128, 128, 128]) == corner_is_noise, corner


def captions(page) -> list[str]:
    return page.locator("#explore-grid figcaption").all_inner_texts()


def test_create_a_dataset_through_the_form_and_explore_it(live_server, page, tmp_path):
    page.goto(live_server.url + "/datasets/new")
    page.fill("input[name=name]", "browser pets")
    page.fill("input[name=train_folder]", str(live_server.folder))
    page.fill("input[name=width]", "32")
    page.fill("input[name=height]", "32")
    page.select_option("select[name=resize]", "crop")
    page.locator("input[name=height]").blur()  # "change" fires when the field is left

    # The resize preview shows the folder's first readable image at the chosen size.
    page.locator("#resize-preview").wait_for(state="visible")
    wait_for_preview(page, "crop to 32x32", 32, 32)

    # A sample image of one's own can be previewed too (after a folder preview as well).
    page.set_input_files("#preview-file", files=[{"name": "wide.png", "mimeType": "image/png",
                                                  "buffer": png_bytes(80, 20)}])
    page.select_option("select[name=resize]", "fill")
    wait_for_preview(page, "fill to 32x32", 32, 32, corner_is_noise=True)
    page.select_option("select[name=resize]", "squash")
    wait_for_preview(page, "squash to 32x32", 32, 32, corner_is_noise=False)
    page.set_input_files("#preview-file", files=[])  # back to the folder's first image
    page.select_option("select[name=resize]", "crop")
    wait_for_preview(page, "crop to 32x32", 32, 32)

    page.screenshot(path=str(tmp_path / "form.png"), full_page=True)

    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/datasets/(?!new$)[\w-]+$"))
    dataset_id = page.url.rsplit("/", 1)[1]
    assert page.locator("h1").inner_text() == "browser pets"

    # The page reloads itself when the build ends: counts per class, then the explorer's images.
    counts = page.locator("#class-counts")
    counts.wait_for(timeout=60_000)
    assert counts.locator("th").all_inner_texts() == ["cat", "dog"]
    assert page.locator("#job-status").inner_text() == "done"
    assert not page.locator("#abort-button").is_visible()  # a finished build cannot be aborted
    page.wait_for_function("() => document.querySelector('img.mean').naturalWidth === 32")
    page.locator("#explore-grid figure").first.wait_for()
    assert set(captions(page)) == {"cat", "dog"}
    first = page.locator("#explore-grid img").first
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=first.element_handle())
    assert first.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [32, 32]

    skipped = page.locator("#skipped-table").inner_text()
    assert "broken.jpg" in skipped and "notes.png" in skipped
    # Issue 31.9: the ignored README is named apart from the unreadable images, not described as them
    assert page.inner_text("#not-images").startswith("Also ignored, not image files")
    assert page.inner_text("#ignored-list").strip().endswith("README.txt") and "README" not in skipped
    page.screenshot(path=str(tmp_path / "dataset.png"), full_page=True)

    # Issue 22: on a 390 px phone the bars keep their proportions (they shrank to their numbers)
    page.set_viewport_size({"width": 390, "height": 800})
    bars = page.evaluate("""() => [...document.querySelectorAll('#class-counts .bar')].map(
        b => [b.getBoundingClientRect().width, Number(b.textContent)])""")
    widest = max(bars)
    assert widest[0] > 150 and page.evaluate("document.documentElement.scrollWidth") <= 390
    for width, n in bars:
        assert abs(width - widest[0] * n / widest[1]) < 3 or width <= 25, bars  # 1.5rem: the smallest bar
    page.set_viewport_size({"width": 1280, "height": 800})

    # Filtering by class shows that class only.
    page.select_option("#explore-class", label="dog")
    page.wait_for_function("""() => {
        const texts = [...document.querySelectorAll('#explore-grid figcaption')].map(f => f.textContent);
        return texts.length > 0 && texts.every(t => t === 'dog');
    }""")
    assert len(captions(page)) == 8  # 10 dogs, 25 % of them in val
    page.select_option("#explore-split", "val")
    page.wait_for_function("""() => {
        const texts = [...document.querySelectorAll('#explore-grid figcaption')].map(f => f.textContent);
        return texts.length === 2 && texts.every(t => t === 'dog');
    }""")

    # The home page lists the dataset, linked to its page.
    page.goto(live_server.url + "/")
    link = page.locator(f"a[href='/datasets/{dataset_id}']").first
    assert link.inner_text() == "browser pets"
    page.screenshot(path=str(tmp_path / "home.png"), full_page=True)


def test_form_shows_a_clear_error_for_a_folder_outside_the_roots(live_server, page, tmp_path):
    page.goto(live_server.url + "/datasets/new")
    page.fill("input[name=name]", "nope")
    page.fill("input[name=train_folder]", str(tmp_path))
    page.click("button[type=submit]")
    error = page.locator("#form-error")
    page.wait_for_function("() => document.getElementById('form-error').textContent.length > 0")
    assert "TRAINYARD_DATA_ROOTS" in error.inner_text()
    assert page.url.endswith("/datasets/new")
