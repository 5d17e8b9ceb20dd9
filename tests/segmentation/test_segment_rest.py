"""``POST /api/models/{id}/segment`` and the Segment page, on the session's trained segmenter:
the answer's mask is the very PNG ``trainyard segment`` writes for the same image and snapshot,
and the page holds the upload form and the overlay's parts."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from typer.testing import CliRunner

from tests.segmentation_data import CLASSES, shapes
from tests.segmentation_model import EPOCHS, trained_segmenter
from trainyard.cli.main import app
from trainyard.web.app import create_app

pytestmark = pytest.mark.slow  # shares the trained segmenter (tests/segmentation_model.py)
PNG_URI = "data:image/png;base64,"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_segmenter(tmp_path_factory)


@pytest.fixture(scope="module")
def client(trained):
    """An API client over the segmenter's home (no scheduler: nothing runs by itself)."""
    with TestClient(create_app(trained.settings, run_scheduler=False)) as test_client:
        yield test_client


def test_the_api_mask_is_the_png_trainyard_segment_writes(trained, client, tmp_path):
    rng = np.random.default_rng(11)
    image, truth = shapes(rng, 64)
    Image.fromarray(image).resize((96, 80), Image.Resampling.NEAREST).save(tmp_path / "wide.jpg", quality=95)
    Image.fromarray(shapes(rng, 64)[0]).save(tmp_path / "same.png")
    names = ("wide.jpg", "same.png")
    result = CliRunner().invoke(app, ["segment", trained.model_id, *(str(tmp_path / n) for n in names),
                                      "--output", str(tmp_path / "out"), "--epoch", str(EPOCHS), "--json"],
                                env=trained.env())
    assert result.exit_code == 0, result.output
    by_cli = json.loads(result.stdout)["results"]
    files = [("images", (n, (tmp_path / n).read_bytes(), "image/png")) for n in names]
    response = client.post(f"/api/models/{trained.model_id}/segment?epoch={EPOCHS}", files=files)
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["classes"] == CLASSES and doc["epoch"] == EPOCHS and doc["network"] == "unet_resnet18"
    assert doc["input"]["width"] == 64 and [r["image"] for r in doc["results"]] == list(names)
    for ours, theirs, name in zip(doc["results"], by_cli, names, strict=True):
        assert ours["mask"].startswith(PNG_URI)
        png = base64.b64decode(ours["mask"][len(PNG_URI):])
        assert png == (tmp_path / "out" / f"{name.rsplit('.', 1)[0]}.png").read_bytes()
        assert ours["areas"] == theirs["areas"]
    wide = Image.open(tmp_path / "out" / "wide.png")
    assert wide.size == (96, 80)  # at the upload's own size, as the CLI's


def test_an_unreadable_upload_is_refused_naming_it(trained, client):
    response = client.post(f"/api/models/{trained.model_id}/segment",
                           files=[("images", ("broken.png", b"not a png", "image/png"))])
    assert response.status_code == 422 and "broken.png" in response.text


def test_the_segment_page_holds_the_upload_form_and_the_overlay(trained, client):
    page = client.get(f"/models/{trained.model_id}/classify")
    assert page.status_code == 200
    for part in ('id="one-file"', 'id="one-button"', 'id="opacity"', 'id="one-canvas"', 'id="one-legend"',
                 "/static/segment.js"):
        assert part in page.text, part
    assert client.get("/static/segment.js").status_code == 200
