"""Colour masks with a colour -> class table (``--mask-colors``): RGB PNGs whose colours map to
class indices, ``ignore`` to 255, and an unknown colour a per-file report line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from tests.segmentation_data import create_dataset, reasons, shapes, stored_masks

COLOURS = {0: (0, 0, 0), 1: (255, 0, 0), 2: (0, 0, 255), 255: (224, 224, 192)}
TABLE = "# colour -> class\n0,0,0 background\n255,0,0 square\n\n0,0,255 disc\n224,224,192 ignore\n"
SIZE = (32, 24)  # stored at the files' own size: the stored masks are the indices themselves


def _colour_set(folder, n: int):
    """(images, masks, the expected index masks) of ``n`` pairs with a border of 255 round the square."""
    images, masks = folder / "images", folder / "masks"
    images.mkdir(parents=True)
    masks.mkdir(parents=True)
    rng = np.random.default_rng(3)
    expected = []
    for i in range(n):
        image, mask = shapes(rng, 32)
        image, mask = image[:24], mask[:24].copy()
        mask[0, :] = 255  # a VOC-style border row
        rgb = np.zeros((*mask.shape, 3), np.uint8)
        for index, colour in COLOURS.items():
            rgb[mask == index] = colour
        Image.fromarray(image).save(images / f"{i:03d}.png")
        Image.fromarray(rgb).save(masks / f"{i:03d}.png")
        expected.append(mask)
    return images, masks, expected


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("colours")
    images, masks, expected = _colour_set(tmp / "data" / "set", 5)
    bad = np.array(Image.open(masks / "004.png"))
    bad[2:4, 2:5] = (9, 9, 9)  # a colour the table does not hold: 6 pixels
    Image.fromarray(bad).save(masks / "004.png")
    Image.new("RGB", SIZE).save(images / "nomask.png")
    table = tmp / "data" / "colours.txt"
    table.write_text(TABLE)
    doc, folder = create_dataset(tmp / "home", tmp / "data", "--train-folder", str(images), "--train-labels",
                                 str(masks), "--mask-colors", str(table), "--size", "32x24", "--val-percent", "0")
    return doc, folder, expected


def test_colour_masks_store_each_colours_class_index(built):
    doc, folder, expected = built
    assert doc["status"] == "done" and doc["classes"] == ["background", "square", "disc"]
    assert doc["images"] == {"train": 4}
    masks = stored_masks(folder, "train")
    assert np.array_equal(masks, np.stack(expected[:4]))  # 255 where the table says ignore


def test_an_unknown_colour_and_a_missing_mask_are_report_lines(built):
    doc, _, _ = built
    assert "unknown colour (9,9,9) at 6 pixels" in reasons(doc)["004.png"]
    assert "no mask" in reasons(doc)["nomask.png"]


def test_a_json_table_with_classes_in_another_order(tmp_path):
    images, masks, expected = _colour_set(tmp_path / "data" / "set", 2)
    table = tmp_path / "data" / "colours.json"
    table.write_text(json.dumps({"background": [0, 0, 0], "square": [255, 0, 0], "disc": [0, 0, 255],
                                 "ignore": [224, 224, 192]}))
    doc, folder = create_dataset(tmp_path / "home", tmp_path / "data", "--train-folder", str(images),
                                 "--train-labels", str(masks), "--mask-colors", str(table),
                                 "--classes", "background,disc,square", "--size", "32x24", "--val-percent", "0")
    assert doc["classes"] == ["background", "disc", "square"]
    swapped = np.stack(expected).copy()
    swapped[np.stack(expected) == 1], swapped[np.stack(expected) == 2] = 2, 1
    assert np.array_equal(stored_masks(folder, "train"), swapped)


def test_a_table_whose_names_are_not_the_classes_fails_the_build(tmp_path):
    from typer.testing import CliRunner

    from trainyard.cli.main import app

    images, masks, _ = _colour_set(tmp_path / "data" / "set", 2)
    table = tmp_path / "data" / "colours.txt"
    table.write_text(TABLE)
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(tmp_path / "data"),
           "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "x", "--task", "segmentation",
                                      "--train-folder", str(images), "--train-labels", str(masks),
                                      "--mask-colors", str(table), "--classes", "background,cat",
                                      "--json"], env=env)
    assert result.exit_code == 1
    assert "not those of --classes" in json.loads(result.stdout)["error"]
