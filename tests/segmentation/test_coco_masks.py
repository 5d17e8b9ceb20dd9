"""COCO polygons and RLE (``--train-labels instances.json``) rasterised into index masks:
background 0, the categories in id order, crowds 255; bad annotations are report lines."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from pycocotools import mask as coco_mask

from tests.segmentation_data import create_dataset, reasons, stored_masks

W, H = 32, 24
SQUARE = [4.0, 4.0, 20.0, 4.0, 20.0, 16.0, 4.0, 16.0]


def _polygon_mask(polygon: list[float]) -> np.ndarray:
    return coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([polygon], H, W))).astype(bool)


def _runs(bits: np.ndarray) -> list[int]:
    """The uncompressed RLE counts of a bool mask (column-major, starting with a run of 0s)."""
    flat = bits.astype(np.uint8).flatten(order="F")
    edges = np.flatnonzero(np.diff(flat)) + 1
    runs = np.diff(np.concatenate([[0], edges, [flat.size]])).tolist()
    return ([0] if flat[0] else []) + runs


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("coco")
    images = tmp / "data" / "images"
    images.mkdir(parents=True)
    for i in range(7):
        Image.new("RGB", (W, H), (i * 30, 0, 0)).save(images / f"{i}.png")
    Image.new("RGB", (W, H)).save(images / "unlisted.png")
    disc = np.zeros((H, W), bool)
    disc[8:20, 10:22] = True
    small = np.zeros((H, W), bool)
    small[10:14, 8:12] = True
    compressed = coco_mask.encode(np.asfortranarray(small.astype(np.uint8)))
    annotations = [
        {"id": 1, "image_id": 0, "category_id": 7, "segmentation": [SQUARE], "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 3, "segmentation": {"counts": _runs(disc), "size": [H, W]},
         "iscrowd": 0},
        {"id": 3, "image_id": 2, "category_id": 7, "segmentation": {"counts": compressed["counts"].decode(),
                                                                    "size": [H, W]}, "iscrowd": 0},
        # a crowd under a larger object under a smaller one: crowd 255, then largest first
        {"id": 4, "image_id": 3, "category_id": 3, "segmentation": {"counts": _runs(disc), "size": [H, W]},
         "iscrowd": 1},
        {"id": 5, "image_id": 3, "category_id": 7, "segmentation": {"counts": compressed["counts"].decode(),
                                                                    "size": [H, W]}, "iscrowd": 0},
        {"id": 6, "image_id": 3, "category_id": 3, "segmentation": [SQUARE], "iscrowd": 0},
        {"id": 7, "image_id": 4, "category_id": 3, "segmentation": [[1, 2, 3, 4]], "iscrowd": 0},  # malformed
        {"id": 8, "image_id": 5, "category_id": 99, "segmentation": [SQUARE], "iscrowd": 0},  # unknown category
        {"id": 9, "image_id": 42, "category_id": 3, "segmentation": [SQUARE], "iscrowd": 0},  # unknown image
        {"id": 10, "image_id": 6, "category_id": 3, "segmentation": {"counts": [5, 10], "size": [H, W]},
         "iscrowd": 0},  # runs short of the image: malformed
    ]
    doc = {"images": [{"id": i, "file_name": f"{i}.png", "width": W, "height": H} for i in range(7)]
           + [{"id": 7, "file_name": "gone.png", "width": W, "height": H}],
           "categories": [{"id": 7, "name": "cat"}, {"id": 3, "name": "dog"}], "annotations": annotations}
    labels = tmp / "data" / "instances.json"
    labels.write_text(json.dumps(doc))
    built_doc, folder = create_dataset(tmp / "home", tmp / "data", "--train-folder", str(images),
                                       "--train-labels", str(labels), "--size", f"{W}x{H}", "--val-percent", "0")
    crowded = np.where(disc, 255, 0).astype(np.uint8)
    crowded[_polygon_mask(SQUARE)] = 1
    crowded[small] = 2  # the cat is smaller than the dog, so drawn over it
    expected = [np.where(_polygon_mask(SQUARE), 2, 0), np.where(disc, 1, 0), np.where(small, 2, 0), crowded]
    return built_doc, folder, np.stack(expected).astype(np.uint8)


def test_polygons_and_both_rles_are_rasterised_into_the_stored_masks(built):
    doc, folder, expected = built
    assert doc["status"] == "done" and doc["classes"] == ["background", "dog", "cat"]  # by category id
    assert doc["images"] == {"train": 4}
    assert np.array_equal(stored_masks(folder, "train"), expected)
    assert _polygon_mask(SQUARE)[5:15, 5:19].all()  # pycocotools drew the square where it is


def test_bad_annotations_are_report_lines_and_leave_their_images_out(built):
    doc, _, _ = built
    report = reasons(doc)
    assert "malformed segmentation" in report["4.png"] and "annotation 7" in report["4.png"]
    assert "category_id 99" in report["5.png"]
    assert "malformed segmentation" in report["6.png"] and "RLE runs cover 15 pixels" in report["6.png"]
    assert "image_id 42" in report["instances.json annotation 9"]
    assert "no such image" in report["instances.json: gone"]
    assert "no mask" in report["unlisted.png"]


def test_classes_that_are_not_the_files_categories_fail_the_build(tmp_path):
    from typer.testing import CliRunner

    from trainyard.cli.main import app

    images = tmp_path / "data" / "images"
    images.mkdir(parents=True)
    Image.new("RGB", (W, H)).save(images / "0.png")
    labels = tmp_path / "data" / "instances.json"
    labels.write_text(json.dumps({"images": [{"id": 0, "file_name": "0.png", "width": W, "height": H}],
                                  "categories": [{"id": 1, "name": "dog"}], "annotations": []}))
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(tmp_path / "data"),
           "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "x", "--task", "segmentation",
                                      "--train-folder", str(images), "--train-labels", str(labels),
                                      "--classes", "background,cat", "--json"], env=env)
    assert result.exit_code == 1 and "background, dog" in json.loads(result.stdout)["error"]


def _coco_split(folder, n: int, categories: list[dict]) -> tuple:
    """(images folder, instances .json) of ``n`` images, each with the square as category 1."""
    images = folder / "images"
    images.mkdir(parents=True)
    for i in range(n):
        Image.new("RGB", (W, H)).save(images / f"{i}.png")
    labels = folder / "instances.json"
    labels.write_text(json.dumps({
        "images": [{"id": i, "file_name": f"{i}.png", "width": W, "height": H} for i in range(n)],
        "categories": categories,
        "annotations": [{"id": i, "image_id": i, "category_id": 1, "segmentation": [SQUARE]} for i in range(n)]}))
    return images, labels


def test_a_val_file_gives_the_val_split_and_must_name_the_same_categories(tmp_path):
    data = tmp_path / "data"
    train = _coco_split(data / "train", 3, [{"id": 1, "name": "box"}])
    val = _coco_split(data / "val", 2, [{"id": 1, "name": "box"}])
    doc, folder = create_dataset(tmp_path / "home", data, "--train-folder", str(train[0]), "--train-labels",
                                 str(train[1]), "--val-folder", str(val[0]), "--val-labels", str(val[1]),
                                 "--size", f"{W}x{H}")
    assert doc["images"] == {"train": 3, "val": 2} and doc["classes"] == ["background", "box"]
    assert np.array_equal(stored_masks(folder, "val"), np.stack([_polygon_mask(SQUARE)] * 2).astype(np.uint8))

    from typer.testing import CliRunner

    from trainyard.cli.main import app

    other = _coco_split(data / "other", 1, [{"id": 1, "name": "crate"}])
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(data), "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "x", "--task", "segmentation",
                                      "--train-folder", str(train[0]), "--train-labels", str(train[1]),
                                      "--val-folder", str(other[0]), "--val-labels", str(other[1]), "--json"],
                                env=env)
    assert result.exit_code == 1 and "other categories" in json.loads(result.stdout)["error"]
