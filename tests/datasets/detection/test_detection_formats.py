"""Each label format read into the same boxes for the same generated images; the class list."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.detection_data import FORMATS, make_shapes_dataset, shapes_truth
from trainyard.core.errors import InvalidInput
from trainyard.datasets.collect import DatasetError
from trainyard.datasets.detection.collect import collect_detection
from trainyard.datasets.detection.label_sources import detect_format
from trainyard.datasets.detection.labels import parse_classes
from trainyard.datasets.spec import DatasetSpec

SIZE = (120, 80)


def spec(images: Path, labels: Path, **fields) -> DatasetSpec:
    return DatasetSpec.model_validate({"name": "d", "task": "detection", "train_folder": str(images),
                                       "train_labels": str(labels), "val_percent": 0, **fields})


def boxes_by_image(plan) -> dict[str, list[tuple[str, tuple[float, ...]]]]:
    out = {}
    for sample in plan.splits["train"]:
        out[sample.path.stem] = sorted((plan.classes[int(c)], tuple(np.round(b, 3)))
                                       for b, c in zip(sample.boxes, sample.labels, strict=True))
    return out


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("formats")
    return {fmt: make_shapes_dataset(root / fmt, n_images=12, size=SIZE, fmt=fmt, seed=3) for fmt in FORMATS}


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_reads_the_generated_boxes(datasets, fmt):
    images, labels = datasets[fmt]
    assert detect_format(labels) == fmt  # told by the files
    plan = collect_detection(spec(images, labels), Path("/"))
    truth = {f"img_{i:04d}": sorted((s.label, tuple(float(v) for v in s.box)) for s in shapes)
             for i, shapes in enumerate(shapes_truth(12, SIZE, seed=3))}
    got = boxes_by_image(plan)
    assert got.keys() == truth.keys()
    for key, expected in truth.items():
        assert [name for name, _ in got[key]] == [name for name, _ in expected], key
        np.testing.assert_allclose([b for _, b in got[key]] or np.zeros((0, 4)),
                                   [b for _, b in expected] or np.zeros((0, 4)), atol=1e-3)
    assert not plan.skipped and not plan.notes
    assert truth["img_0000"] == [] and got["img_0000"] == []  # an image with no boxes is kept


def test_formats_agree_with_each_other(datasets):
    plans = {fmt: boxes_by_image(collect_detection(spec(*datasets[fmt]), Path("/"))) for fmt in FORMATS}
    for fmt in FORMATS[1:]:
        assert plans[fmt].keys() == plans["kitti"].keys()
        for key in plans["kitti"]:
            assert [n for n, _ in plans[fmt][key]] == [n for n, _ in plans["kitti"][key]]


def test_class_list_keeps_maps_and_drops(datasets):
    images, labels = datasets["kitti"]
    plan = collect_detection(spec(images, labels, classes="disc=round"), Path("/"))
    assert plan.classes == ["round"]
    n_squares = sum(s.label == "square" for shapes in shapes_truth(12, SIZE, seed=3) for s in shapes)
    n_discs = sum(s.label == "disc" for shapes in shapes_truth(12, SIZE, seed=3) for s in shapes)
    assert sum(len(s.labels) for s in plan.splits["train"]) == n_discs
    (dropped,) = [s for s in plan.skipped if "square" in s.reason]  # one line per dropped class
    assert f"{n_squares} boxes dropped" in dropped.reason and "line" in dropped.path


def test_class_list_maps_several_names_to_one(datasets):
    images, labels = datasets["voc"]
    plan = collect_detection(spec(images, labels, classes=["square=shape", "disc=shape"]), Path("/"))
    assert plan.classes == ["shape"] and not plan.skipped


def test_yolo_without_classes_txt_takes_the_class_list(tmp_path):
    images, labels = make_shapes_dataset(tmp_path, n_images=6, fmt="yolo")
    (labels / "classes.txt").unlink()
    with pytest.raises(DatasetError, match="classes.txt"):
        collect_detection(spec(images, labels, labels_format="yolo"), Path("/"))
    plan = collect_detection(spec(images, labels, labels_format="yolo", classes="square,disc"), Path("/"))
    assert plan.classes == ["square", "disc"]


@pytest.mark.parametrize("value, message", [("a,,=b", "NAME or NAME=NEW_NAME"), ("a=b,a=c", "mapped twice"),
                                            (" , ", "empty")])
def test_bad_class_lists_are_refused(value, message):
    with pytest.raises(InvalidInput, match=message):
        parse_classes(value)


def test_spec_defaults_and_refusals(datasets):
    images, labels = datasets["coco"]
    assert spec(images, labels).resize == "pad"
    assert DatasetSpec.model_validate({"name": "c", "train_folder": "x"}).resize == "squash"
    with pytest.raises(ValueError, match="not a detection resize"):
        spec(images, labels, resize="crop")
    with pytest.raises(ValueError, match="need task 'detection'"):
        DatasetSpec.model_validate({"name": "c", "train_folder": "x", "train_labels": "y"})
    with pytest.raises(ValueError, match="val_folder and val_labels together"):
        spec(images, labels, val_folder=str(images))
