"""Bad detection input is listed (file and line named) and nothing else is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from tests.detection_data import make_shapes_dataset
from trainyard.core.events import EventWriter
from trainyard.datasets.build import build_dataset
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.detection.collect import collect_detection
from trainyard.datasets.spec import DatasetSpec

KITTI_TAIL = "0 0 0 0 0 0 0"


def kitti_line(name: str, x1, y1, x2, y2) -> str:
    return f"{name} 0.00 0 0.00 {x1} {y1} {x2} {y2} {KITTI_TAIL}\n"


def spec(images: Path, labels: Path, **fields) -> DatasetSpec:
    return DatasetSpec.model_validate({"name": "bad", "task": "detection", "train_folder": str(images),
                                       "train_labels": str(labels), "val_percent": 0, "width": 32,
                                       "height": 32, **fields})


def reasons(entries) -> dict[str, str]:
    return {Path(e.path.split(" ")[0]).name + (" " + " ".join(e.path.split(" ")[1:]) if " " in e.path else ""):
            e.reason for e in entries}


@pytest.fixture
def kitti(tmp_path) -> tuple[Path, Path]:
    images, labels = tmp_path / "images", tmp_path / "labels"
    images.mkdir()
    labels.mkdir()
    for name in ("good", "partly", "outside", "flat", "broken", "nolabel", "unknown"):
        Image.new("RGB", (60, 40), (90, 90, 90)).save(images / f"{name}.png")
    (labels / "good.txt").write_text(kitti_line("car", 1, 2, 30, 20) + kitti_line("DontCare", 0, 0, 5, 5))
    (labels / "partly.txt").write_text(kitti_line("car", -5, 10, 70, 30))
    (labels / "outside.txt").write_text(kitti_line("car", 61, 0, 80, 10) + kitti_line("car", 1, 1, 9, 9))
    (labels / "flat.txt").write_text(kitti_line("car", 10, 10, 10, 20) + kitti_line("car", 30, 10, 20, 20))
    (labels / "broken.txt").write_text(kitti_line("car", 1, 1, 9, 9) + "car 1 2\n")
    (labels / "orphan.txt").write_text(kitti_line("car", 1, 1, 9, 9))
    (labels / "unknown.txt").write_text(kitti_line("bus", 1, 1, 9, 9) + kitti_line("car", 2, 2, 9, 9))
    (images / "corrupt.png").write_bytes(b"not a png")
    (labels / "corrupt.txt").write_text(kitti_line("car", 1, 1, 9, 9))
    return images, labels


def test_every_bad_kitti_case_is_listed(kitti):
    plan = collect_detection(spec(*kitti, classes="car"), Path("/"))
    skipped, notes = reasons(plan.skipped), reasons(plan.notes)
    assert "lies outside the 60x40 image" in skipped["outside.txt line 1"]
    assert "zero or negative area" in skipped["flat.txt line 1"]
    assert "zero or negative area" in skipped["flat.txt line 2"]
    assert "line 2: 3 fields, KITTI needs at least 8" in skipped["broken.txt"]
    assert "its image is left out" in skipped["broken.txt"]
    assert skipped["orphan.txt"] == "labels with no image file: left out"
    assert "class 'bus' is not one of the dataset's classes: 1 box dropped" in skipped["unknown.txt line 1"]
    assert "not an image" in skipped["corrupt.png"]
    assert "clipped to the 60x40 image: [0, 10, 60, 30]" in notes["partly.txt line 1"]
    assert notes["nolabel.png"] == "no label file: kept as an image with no boxes"
    kept = {s.path.stem: s for s in plan.splits["train"]}
    assert sorted(kept) == ["flat", "good", "nolabel", "outside", "partly", "unknown"]  # broken, corrupt: out
    assert kept["outside"].boxes.tolist() == [[1, 1, 9, 9]]  # the good box beside a bad one stays
    assert len(kept["good"].boxes) == 1 and any("DontCare" in w for w in plan.warnings)


def test_malformed_yolo_line_names_file_and_line(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=4, fmt="yolo")
    (labels / "img_0002.txt").write_text("0 0.5 0.5 0.2 0.2\n\n1 0.5 zero 0.2 0.2\n")
    (labels / "img_0003.txt").write_text("7 0.5 0.5 0.2 0.2\n")
    plan = collect_detection(spec(images, labels), Path("/"))
    skipped = reasons(plan.skipped)
    assert skipped["img_0002.txt"].startswith("line 3: expected 'class cx cy w h'")
    assert skipped["img_0003.txt line 1"] == "class index 7 is not one of 0..1 (2 class names): 1 box dropped"
    assert sorted(s.path.stem for s in plan.splits["train"]) == ["img_0000", "img_0001", "img_0003"]  # box out


def test_coco_problems_are_listed(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=4, fmt="coco")
    doc = json.loads(labels.read_text())
    doc["images"].append({"id": 99, "file_name": "missing.jpg", "width": 9, "height": 9})
    doc["annotations"].append({"id": 500, "image_id": 1, "category_id": 10, "bbox": "wide"})
    doc["annotations"].append({"id": 501, "image_id": 1, "category_id": 10, "bbox": [0, 0, 5, 5], "iscrowd": 1})
    labels.write_text(json.dumps(doc))
    Image.new("RGB", (20, 20)).save(images / "extra.png")
    plan = collect_detection(spec(images, labels), Path("/"))
    skipped = {e.path: e.reason for e in plan.skipped}
    assert skipped[f"{labels}: missing"] == "labels with no image file: left out"
    assert skipped[str(images / "extra.png")] == "not in the COCO file: left out (unlabelled)"
    assert "bbox [x, y, w, h]" in skipped[f"{labels} annotation 500"]
    assert skipped[f"{labels} annotation 500"].endswith("its image is left out")
    assert "img_0000" not in {s.path.stem for s in plan.splits["train"]}  # image_id 1
    assert any("1 crowd annotation" in w for w in plan.warnings)


def test_coco_that_is_not_coco_fails_in_one_line(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=2, fmt="coco")
    labels.write_text('{"images": []')
    with pytest.raises(DatasetError, match="is not a COCO file"):
        collect_detection(spec(images, labels), Path("/"))


def test_voc_entities_and_bad_xml_are_refused(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=3, fmt="voc")
    (labels / "img_0001.xml").write_text('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "y">]>'
                                         "<annotation>&x;</annotation>")
    (labels / "img_0002.xml").write_text("<annotation><object><name>disc</name></object>")
    plan = collect_detection(spec(images, labels), Path("/"))
    skipped = reasons(plan.skipped)
    assert "DTD or entity declaration refused" in skipped["img_0001.xml"]
    assert "not valid XML" in skipped["img_0002.xml"]
    assert [s.path.stem for s in plan.splits["train"]] == ["img_0000"]


def _expanding_voc(encoding: str) -> bytes:
    """A VOC file whose entities would expand into a class name of 1,000,000 characters."""
    text = (f'<?xml version="1.0" encoding="{encoding}"?>\n'
            '<!DOCTYPE annotation [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">'
            '<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">]>'
            "<annotation><object><name>&f;</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax>"
            "<ymax>9</ymax></bndbox></object></annotation>")
    return text.encode(encoding)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
def test_voc_entities_are_refused_whatever_the_encoding(tmp_path, encoding):
    images, labels = make_shapes_dataset(tmp_path, n_images=2, fmt="voc")
    (labels / "img_0001.xml").write_bytes(_expanding_voc(encoding))
    plan = collect_detection(spec(images, labels), Path("/"))
    assert "DTD or entity declaration refused" in reasons(plan.skipped)["img_0001.xml"]
    assert [s.path.stem for s in plan.splits["train"]] == ["img_0000"]
    assert all(len(name) < 100 for name in plan.classes)


def test_a_voc_class_name_too_long_is_reported_not_stored(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=2, fmt="voc")
    long_name = "x" * 201
    (labels / "img_0001.xml").write_text(
        f"<annotation><object><name>{long_name}</name><bndbox><xmin>1</xmin><ymin>1</ymin>"
        "<xmax>9</xmax><ymax>9</ymax></bndbox></object></annotation>", encoding="utf-16")
    plan = collect_detection(spec(images, labels), Path("/"))
    assert "class name of 201 characters (at most 200) refused" in reasons(plan.skipped)["img_0001.xml"]
    assert long_name not in plan.classes
    assert [s.path.stem for s in plan.splits["train"]] == ["img_0000"]


def test_a_build_with_nothing_usable_fails_in_one_line(kitti, tmp_path):
    images, labels = kitti
    for f in labels.glob("*.txt"):
        f.write_text("car 1 2\n")
    job = tmp_path / "job"
    job.mkdir()
    with EventWriter(job) as events, pytest.raises(DatasetError) as err:
        build_dataset(spec(images, labels), job, events, workers=1)
    assert "\n" not in str(err.value) and "no usable" in str(err.value)
    assert not (job / "dataset").exists() and not (job / "dataset.tmp").exists()
