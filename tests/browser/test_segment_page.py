"""The Segment page in Debian's chromium, on the session's trained segmenter: an uploaded image
comes back drawn with its mask laid over it in the class colours the page was given, the legend
lists every class with its share of the image (the shares of the server's answer), and the
opacity slider redraws the overlay without asking the server again."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from tests.live_server import BROWSER_TOKEN, serving
from tests.segmentation_data import CLASSES, shapes
from tests.segmentation_model import trained_segmenter
from trainyard.jobs.scheduling.resources import Pools

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CANVAS_PIXELS = """() => { const c = document.getElementById('one-canvas');
  return Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data); }"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from trainyard.web.app import create_app

    trained = trained_segmenter(tmp_path_factory)
    settings = trained.settings.model_copy(update={"auth_token": BROWSER_TOKEN})
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    with serving(app) as url:
        yield SimpleNamespace(url=url, trained=trained)


def test_an_upload_is_drawn_with_its_mask_and_a_legend_and_the_slider_redraws(server, page, tmp_path):
    image, _ = shapes(np.random.default_rng(5), 64)
    Image.fromarray(image).save(tmp_path / "upload.png")
    answers = []
    page.on("response", lambda r: answers.append(r.url) if "/segment" in r.url and r.request.method == "POST" else None)
    page.goto(f"{server.url}/models/{server.trained.model_id}/classify")  # the task's use page
    page.set_input_files("#one-file", str(tmp_path / "upload.png"))
    page.click("#one-button")
    page.wait_for_selector("#one-result:not([hidden])", timeout=60_000)
    assert page.inner_text("#one-error") == ""
    rows = page.locator("#one-legend tr").all_inner_texts()[1:]
    assert [r.split("\t")[0].strip() for r in rows] == list(CLASSES)
    shares = [float(r.split("\t")[1].strip().rstrip("%")) for r in rows]
    assert abs(sum(shares) - 100) < 0.5  # every pixel is some class
    half = np.array(page.evaluate(CANVAS_PIXELS), dtype=np.int32)
    page.fill("#opacity", "0")
    page.dispatch_event("#opacity", "input")
    assert page.inner_text("#opacity-value") == "0.00"
    bare = np.array(page.evaluate(CANVAS_PIXELS), dtype=np.int32)
    assert (half != bare).any(), "at opacity 0.5 the mask's colours show; at 0 only the image does"
    assert len(answers) == 1, "the slider redraws from the answer it has"
