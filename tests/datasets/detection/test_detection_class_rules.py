"""One class rule for the four label formats: the class order, and a box of an unknown class.

The order: the class list's (``--classes``); else YOLO's classes.txt; else the names the boxes
use, sorted. An unknown class (a name the list drops, a YOLO index past classes.txt, a COCO
category id the file does not define) drops the box, counted in the listing; the image stays.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.detection_data import FORMATS, make_shapes_dataset, shapes_truth
from trainyard.datasets.detection.collect import collect_detection
from trainyard.datasets.spec import DatasetSpec

SIZE = (120, 80)
GENERATED = ("square", "disc")  # the generator's order: classes.txt's, and COCO's category ids'
KITTI_TAIL = "0.00 0.00 0.00 0.00 0.00 0.00 0.00"
VOC_BUS = "<object><name>bus</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object>"


def spec(images: Path, labels: Path, **fields) -> DatasetSpec:
    return DatasetSpec.model_validate({"name": "d", "task": "detection", "train_folder": str(images),
                                       "train_labels": str(labels), "val_percent": 0, **fields})


def add_unknown_box(fmt: str, labels: Path, stem: str) -> None:
    """One box of a class the dataset does not have, in ``stem``'s labels, as each format says it."""
    if fmt == "kitti":
        with (labels / f"{stem}.txt").open("a") as f:
            f.write(f"bus 0.00 0 0.00 1 1 9 9 {KITTI_TAIL}\n")
    elif fmt == "voc":
        path = labels / f"{stem}.xml"
        path.write_text(path.read_text().replace("</annotation>", VOC_BUS + "</annotation>"))
    elif fmt == "yolo":
        with (labels / f"{stem}.txt").open("a") as f:
            f.write("7 0.5 0.5 0.1 0.1\n")
    else:
        doc = json.loads(labels.read_text())
        image_id = next(i["id"] for i in doc["images"] if Path(i["file_name"]).stem == stem)
        doc["annotations"].append({"id": 900, "image_id": image_id, "category_id": 99, "bbox": [1, 1, 8, 8]})
        labels.write_text(json.dumps(doc))


@pytest.mark.parametrize("fmt", FORMATS)
def test_without_a_list_the_order_is_classes_txt_or_else_sorted(tmp_path, fmt):
    images, labels = make_shapes_dataset(tmp_path, n_images=8, size=SIZE, fmt=fmt, seed=3)
    plan = collect_detection(spec(images, labels), Path("/"))
    assert plan.classes == (list(GENERATED) if fmt == "yolo" else sorted(GENERATED))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_class_list_sets_the_order_in_every_format(tmp_path, fmt):
    images, labels = make_shapes_dataset(tmp_path, n_images=8, size=SIZE, fmt=fmt, seed=3)
    for order in (["square", "disc"], ["disc", "square"]):
        assert collect_detection(spec(images, labels, classes=order), Path("/")).classes == order


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unknown_class_drops_the_box_not_the_image(tmp_path, fmt):
    images, labels = make_shapes_dataset(tmp_path, n_images=8, size=SIZE, fmt=fmt, seed=3)
    truth = shapes_truth(8, SIZE, seed=3)
    stem = next(f"img_{i:04d}" for i, shapes in enumerate(truth) if shapes)
    add_unknown_box(fmt, labels, stem)
    plan = collect_detection(spec(images, labels, classes="square,disc"), Path("/"))
    kept = {s.path.stem: s for s in plan.splits["train"]}
    assert len(kept) == 8 and len(kept[stem].boxes) == len(truth[int(stem[4:])])  # its true boxes stay
    (dropped,) = [s for s in plan.skipped if "dropped" in s.reason]
    assert dropped.reason.endswith(": 1 box dropped"), dropped.reason


def test_an_unknown_coco_category_names_the_id_and_the_file(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=4, size=SIZE, fmt="coco", seed=3)
    add_unknown_box("coco", labels, "img_0001")
    plan = collect_detection(spec(images, labels), Path("/"))  # no class list: the file's own categories
    (dropped,) = [s for s in plan.skipped if "category_id" in s.reason]
    assert dropped.reason == "category_id 99 is not one of annotations.json's categories (2 defined): 1 box dropped"
    assert dropped.path == f"{labels} annotation 900"
    assert plan.classes == sorted(GENERATED) and "img_0001" in {s.path.stem for s in plan.splits["train"]}


def test_an_unknown_yolo_index_names_the_index_and_the_line(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=4, size=SIZE, fmt="yolo", seed=3)
    add_unknown_box("yolo", labels, "img_0001")
    plan = collect_detection(spec(images, labels), Path("/"))
    (dropped,) = [s for s in plan.skipped if "index" in s.reason]
    assert dropped.reason == "class index 7 is not one of 0..1 (2 class names): 1 box dropped"
    assert dropped.path.startswith(str(labels / "img_0001.txt") + " line ")
