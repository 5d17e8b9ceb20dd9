"""A segmentation dataset's page: each class's share of the pixels and its image count, a legend
of the class colours, and the explorer's images with their mask laid over them (the overlay PNG:
a class's pixels blended toward its colour, the background's left as they were)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from PIL import Image

from tests.conftest import open_client
from tests.segmentation_data import create_dataset, save_mask

CLASSES = ["background", "road", "car"]
GREY = 100
SIZE = 32
ROAD = (slice(8, 16), slice(0, 16))  # 128 pixels in every image: 12.5 % of them
CAR = (slice(20, 24), slice(20, 28))  # 32 pixels in half of the images


@pytest.fixture
def dataset(settings):
    """(dataset id, settings) of six grey images, each with a road, the first three with a car too."""
    images, masks = settings.data_roots[0] / "images", settings.data_roots[0] / "masks"
    images.mkdir(parents=True)
    masks.mkdir()
    for i in range(6):
        Image.new("RGB", (SIZE, SIZE), (GREY, GREY, GREY)).save(images / f"{i}.png")
        mask = np.zeros((SIZE, SIZE), np.uint8)
        mask[ROAD] = 1
        if i < 3:
            mask[CAR] = 2
        save_mask(masks / f"{i}.png", mask)
    doc, _ = create_dataset(settings.home, settings.data_roots[0], "--train-folder", str(images),
                            "--train-labels", str(masks), "--classes", ",".join(CLASSES),
                            "--size", f"{SIZE}x{SIZE}", "--val-percent", "0", "--test-percent", "0")
    assert doc["images"] == {"train": 6}
    return doc["id"]


def _png(client, url: str) -> np.ndarray:
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    return np.asarray(Image.open(io.BytesIO(response.content)).convert("RGB")).astype(int)


def test_the_page_shows_each_class_pixel_share_image_count_and_colour(settings, dataset):
    with open_client(settings, run_scheduler=False) as client:
        page = client.get(f"/datasets/{dataset}").text
    table = page[page.index('id="pixel-shares"'):]
    table = table[:table.index("</table>")]
    rows = {name: row for row in table.split("<tr>") for name in CLASSES if f" {name}</td>" in row}
    assert "<td>12.5%</td><td>6</td>" in rows["road"]
    assert "<td>1.6%</td><td>3</td>" in rows["car"]  # 3 x 32 of 6 x 1024 pixels
    assert "<td>85.9%</td><td>6</td>" in rows["background"]
    assert "rgb(230,25,75)" in rows["road"] and "rgb(60,180,75)" in rows["car"]
    assert 'id="explore-legend"' in page and 'data-masks="true"' in page


def test_the_overlay_blends_a_class_colour_inside_its_mask_and_nothing_outside(settings, dataset):
    with open_client(settings, run_scheduler=False) as client:
        with_car = client.get(f"/api/datasets/{dataset}/images", params={"label": 2}).json()
        assert with_car["total"] == 3 and all(i["labels"] == [0, 1, 2] for i in with_car["images"])
        url = f"/api/datasets/{dataset}/images/train/{with_car['images'][0]['index']}/overlay.png"
        half, full, none = (_png(client, f"{url}?opacity={o}") for o in (0.5, 1, 0))
        assert client.get(f"/api/datasets/{dataset}/images/train/6/overlay.png").status_code == 404
    alpha = 128 / 255  # 0.5 as a canvas keeps it
    road = [round(GREY * (1 - alpha) + c * alpha) for c in (230, 25, 75)]
    car = [round(GREY * (1 - alpha) + c * alpha) for c in (60, 180, 75)]
    assert np.abs(half[ROAD] - road).max() <= 1 and np.abs(half[CAR] - car).max() <= 1
    assert (half[:8] == GREY).all() and (half[24:] == GREY).all()  # background: the image itself
    assert (full[ROAD] == (230, 25, 75)).all() and (none == GREY).all()


def test_a_dataset_without_masks_has_no_overlay(settings, make_images, wait_job):
    folder = settings.data_roots[0] / "flat"
    make_images(folder, {"a": 3, "b": 3}, size=(16, 16))
    with open_client(settings) as client:
        response = client.post("/api/datasets", json={"name": "flat", "train_folder": str(folder),
                                                      "width": 16, "height": 16, "val_percent": 0})
        job = wait_job(client, response.json()["id"])
        assert job["status"] == "done", job
        answer = client.get(f"/api/datasets/{job['id']}/images/train/0/overlay.png")
        page = client.get(f"/datasets/{job['id']}").text
    assert answer.status_code == 404 and "not a segmentation dataset" in answer.text
    assert 'id="pixel-shares"' not in page and 'data-masks="false"' in page


def test_the_form_offers_the_mask_options_of_the_cli(settings):
    from trainyard.datasets.spec import DatasetSpec

    with open_client(settings, run_scheduler=False) as client:
        page = client.get("/datasets/new").text
    panel = page[page.index('data-panel="segmentation"'):]
    panel = panel[:panel.index("</fieldset>")]
    names = set(re.findall(r'name="seg_(\w+)"', panel))
    assert {"train_folder", "train_labels", "labels_format", "mask_colors", "classes", "val_labels"} <= names
    assert names <= set(DatasetSpec.model_fields)  # each is a spec field once its prefix is cut
    assert "<option>voc</option>" in panel and "<option>coco</option>" in panel
