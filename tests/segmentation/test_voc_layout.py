"""The Pascal VOC segmentation layout (``--labels-format voc``): JPEGImages/, SegmentationClass/
palette PNGs with 255 borders, and ImageSets/Segmentation/{train,val}.txt giving the splits."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.segmentation_data import create_dataset, reasons, shapes, stored_masks
from trainyard.datasets.segmentation.voc import VOC_CLASSES

VOC_PALETTE = [0, 0, 0, 128, 0, 0, 0, 128, 0] + [0] * (252 * 3) + [224, 224, 192]  # 255: the border


def _voc_root(root, ids: list[str]) -> dict[str, np.ndarray]:
    """A VOC root of the ``ids`` (index masks: 0, 15 person, 12 dog, 255 borders); their masks."""
    for part in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (root / part).mkdir(parents=True)
    rng = np.random.default_rng(5)
    masks = {}
    for name in ids:
        image, mask = shapes(rng, 32)
        mask = np.choose(mask, [0, 15, 12]).astype(np.uint8)  # the square a person, the disc a dog
        mask[-1, :] = 255
        Image.fromarray(image).save(root / "JPEGImages" / f"{name}.jpg", quality=95)
        png = Image.fromarray(mask, mode="L").convert("P")
        png.putpalette(VOC_PALETTE)
        png.save(root / "SegmentationClass" / f"{name}.png")
        masks[name] = mask
    return masks


def test_a_voc_root_builds_its_listed_splits_with_the_voc_classes(tmp_path):
    root = tmp_path / "data" / "VOC2012"
    ids = ["2007_000032", "2007_000033", "2007_000039", "2007_000042", "2007_000061"]
    masks = _voc_root(root, ids)
    (root / "SegmentationClass" / "2007_000042.png").unlink()  # listed, its image there, no mask
    lists = root / "ImageSets" / "Segmentation"
    lists.joinpath("train.txt").write_text("2007_000032\n2007_000033\n2007_000042\n2008_999999\n")
    lists.joinpath("val.txt").write_text("2007_000039\n2007_000061\n")
    doc, folder = create_dataset(tmp_path / "home", tmp_path / "data", "--train-folder", str(root),
                                 "--labels-format", "voc", "--size", "32x32")
    assert doc["status"] == "done" and doc["classes"] == VOC_CLASSES and len(VOC_CLASSES) == 21
    assert doc["images"] == {"train": 2, "val": 2}  # the lists' splits, not val_percent's draw
    assert np.array_equal(stored_masks(folder, "train"), np.stack([masks["2007_000032"], masks["2007_000033"]]))
    assert np.array_equal(stored_masks(folder, "val"), np.stack([masks["2007_000039"], masks["2007_000061"]]))
    report = reasons(doc)
    assert "no mask" in report["2007_000042.jpg"]
    assert "no image" in report["2008_999999"]
    assert doc["pixel_shares"]["train"]["person"] > 0 and doc["pixel_shares"]["train"]["cat"] == 0


def test_a_voc_root_takes_no_val_folder():
    from pydantic import ValidationError

    from trainyard.datasets.spec import DatasetSpec

    with pytest.raises(ValidationError, match="val_folder"):  # VOC's splits come from its lists
        DatasetSpec.model_validate({"name": "x", "task": "segmentation", "train_folder": "voc",
                                    "labels_format": "voc", "val_folder": "v", "val_labels": "m"})


def test_without_a_train_list_every_mask_val_does_not_list_is_a_training_pair(tmp_path):
    root = tmp_path / "data" / "VOC2012"
    masks = _voc_root(root, ["a", "b", "c"])
    (root / "ImageSets" / "Segmentation" / "val.txt").write_text("b\n")
    doc, folder = create_dataset(tmp_path / "home", tmp_path / "data", "--train-folder", str(root),
                                 "--labels-format", "voc", "--classes", ",".join(VOC_CLASSES[:16]),
                                 "--size", "32x32")
    assert doc["images"] == {"train": 2, "val": 1} and doc["classes"] == VOC_CLASSES[:16]
    assert np.array_equal(stored_masks(folder, "train"), np.stack([masks["a"], masks["c"]]))
