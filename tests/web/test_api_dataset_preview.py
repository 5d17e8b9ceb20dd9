"""The resize preview (``POST /api/datasets/preview``): an uploaded image or a folder's first
readable one, resized as the dataset build would, and never an image from outside the roots."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tests.web.test_api_datasets import png_size
from trainyard.datasets.resize_plans import RESIZE_MODES


@pytest.fixture
def sample_jpeg() -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (30, 60, 3), dtype=np.uint8)).save(buf, "JPEG")
    return buf.getvalue()


@pytest.mark.parametrize("mode", RESIZE_MODES)
def test_preview_of_an_uploaded_image_has_the_target_size(client, sample_jpeg, mode):
    response = client.post("/api/datasets/preview", files={"image": ("a.jpg", sample_jpeg, "image/jpeg")},
                           data={"width": 40, "height": 20, "resize": mode, "channels": 3})
    assert response.status_code == 200, response.text
    assert png_size(response.content) == (40, 20)


def test_preview_in_grayscale(client, sample_jpeg):
    response = client.post("/api/datasets/preview", files={"image": ("a.jpg", sample_jpeg, "image/jpeg")},
                           data={"width": 16, "height": 16, "channels": 1})
    assert Image.open(io.BytesIO(response.content)).mode == "L"


def test_preview_of_a_folder_uses_its_first_readable_image(client, settings, make_images_with_bad_files):
    folder = make_images_with_bad_files(settings.data_roots[0] / "images")
    # The folder's first file in sorted order is cat/broken.jpg: the preview must get past it.
    response = client.post("/api/datasets/preview", data={"width": 20, "height": 10, "folder": str(folder)})
    assert response.status_code == 200, response.text
    assert png_size(response.content) == (20, 10)


def test_preview_of_a_folder_without_images_is_404(client, settings):
    empty = settings.data_roots[0] / "empty"
    empty.mkdir(parents=True)
    response = client.post("/api/datasets/preview", data={"folder": str(empty)})
    assert response.status_code == 404
    assert "no image" in response.json()["detail"]


def test_preview_refuses_folders_outside_the_roots(client, tmp_path, make_images):
    outside = make_images(tmp_path / "elsewhere", {"cat": 1})
    response = client.post("/api/datasets/preview", data={"folder": str(outside)})
    assert response.status_code == 403
    assert "TRAINYARD_DATA_ROOTS" in response.json()["detail"]


@pytest.mark.parametrize("link", ["file", "folder"])
def test_preview_never_follows_a_link_out_of_the_data_roots(client, settings, tmp_path, link):
    """As the dataset builder does: a symlink to outside the folder is skipped, not read."""
    secret = tmp_path / "outside" / "secret.png"
    secret.parent.mkdir()
    Image.fromarray(np.full((8, 8, 3), (250, 0, 250), np.uint8)).save(secret)
    folder = settings.data_roots[0] / "linked"
    folder.mkdir(parents=True)
    if link == "file":
        (folder / "a.png").symlink_to(secret)
    else:
        (folder / "cls").symlink_to(secret.parent, target_is_directory=True)
    response = client.post("/api/datasets/preview", data={"width": 8, "height": 8, "folder": str(folder)})
    assert response.status_code == 404, "the outside image's pixels were returned"
    assert "no image" in response.json()["detail"]


def test_preview_errors_are_clear(client, sample_jpeg):
    bad_mode = client.post("/api/datasets/preview", files={"image": ("a.jpg", sample_jpeg, "image/jpeg")},
                           data={"resize": "stretch"})
    assert bad_mode.status_code == 422 and "stretch" in bad_mode.json()["detail"]
    not_image = client.post("/api/datasets/preview", files={"image": ("a.jpg", b"hello", "image/jpeg")})
    assert not_image.status_code == 422
    nothing = client.post("/api/datasets/preview", data={"width": 10})
    assert nothing.status_code == 422
