"""``trainyard dataset create --task segmentation``: index-PNG masks to a stored dataset, with a
per-file report for the bad pairs while the good ones build."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.segmentation_data import CLASSES, make_segmentation_set, save_mask
from trainyard.cli.main import app
from trainyard.core.paths import JobFolder
from trainyard.datasets.segmentation.store import SegmentationSplit


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("segdata")
    data = tmp / "data"
    images, masks = make_segmentation_set(data / "set", 24, size=40)
    Image.new("RGB", (40, 40)).save(images / "nomask.png")  # an image without a mask
    save_mask(masks / "orphan.png", np.zeros((40, 40), np.uint8))  # a mask without an image
    save_mask(masks / "000.png", np.zeros((30, 40), np.uint8))  # a mask of another size
    save_mask(masks / "001.png", np.full((40, 40), 7, np.uint8))  # an index past the classes
    Image.new("RGB", (40, 40), (9, 9, 9)).save(masks / "002.png")  # a colour mask
    env = {"TRAINYARD_HOME": str(tmp / "home"), "TRAINYARD_DATA_ROOTS": str(data), "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "shapes", "--task", "segmentation",
                                      "--train-folder", str(images), "--train-labels", str(masks),
                                      "--classes", ",".join(CLASSES), "--size", "32x24", "--val-percent", "25",
                                      "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return doc, JobFolder(tmp / "home" / "jobs" / doc["id"]).dataset


def test_bad_pairs_are_reported_one_per_file_and_the_good_ones_build(built):
    doc, _ = built
    reasons = {Path(s["path"]).name: s["reason"] for s in doc["skipped"]}
    assert "no mask" in reasons["nomask.png"]
    assert "mask with no image" in reasons["orphan.png"]
    assert "40x30" in reasons["000.png"] and "40x40" in reasons["000.png"]
    assert "class index 7" in reasons["001.png"]
    assert "not an 8-bit index" in reasons["002.png"]
    assert doc["status"] == "done" and doc["task"] == "segmentation" and doc["classes"] == CLASSES
    assert doc["images"] == {"train": 16, "val": 5}  # 21 good pairs, a quarter drawn for val


def test_masks_are_resized_by_nearest_neighbour_aligned_with_their_images(built):
    _, folder = built
    split = SegmentationSplit(folder / "train")
    masks = split.mask_batch(np.arange(len(split)))
    assert masks.shape == (16, 24, 32) and set(np.unique(masks).tolist()) <= {0, 1, 2}
    images = split.images(np.arange(len(split))).astype(int)
    red = (images[..., 0] > 200) & (images[..., 1] < 80)  # the square's colour
    assert (masks[red] == 1).mean() > 0.9  # the colour lies where the mask says square


def test_the_info_gives_each_class_its_share_of_the_pixels(built):
    doc, _ = built
    shares = doc["pixel_shares"]["train"]
    assert set(shares) == set(CLASSES) and abs(sum(shares.values()) - 1) < 1e-3
    assert shares["background"] > shares["square"] > 0 and shares["disc"] > 0
    assert doc["counts"]["train"]["square"] == 16


def test_a_segmentation_dataset_without_class_names_is_refused(tmp_path):
    images, masks = make_segmentation_set(tmp_path / "set", 2, size=16)
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(tmp_path),
           "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "x", "--task", "segmentation",
                                      "--train-folder", str(images), "--train-labels", str(masks)], env=env)
    assert result.exit_code == 2 and "class names" in result.stderr
