"""The mask formats' spec rules and registry: each format has its rules and its reader, the
format is told by what was given, and the colour table travels through REST like any path."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainyard.datasets.segmentation.formats import MASK_READERS
from trainyard.datasets.segmentation.spec_rules import MASK_FORMATS, mask_format
from trainyard.datasets.spec import DatasetSpec

BASE = {"name": "x", "task": "segmentation", "train_folder": "images"}


def test_every_mask_format_has_its_rules_and_its_reader():
    assert set(MASK_READERS) == set(MASK_FORMATS)


@pytest.mark.parametrize("fields, fmt", [
    ({"train_labels": "masks", "classes": "background,a"}, "index"),
    ({"train_labels": "masks", "mask_colors": "colours.txt"}, "colors"),
    ({"train_labels": "instances.JSON"}, "coco"),
    ({"labels_format": "voc"}, "voc"),
])
def test_the_format_is_told_by_what_was_given(fields, fmt):
    assert mask_format(DatasetSpec.model_validate({**BASE, **fields})) == fmt


@pytest.mark.parametrize("fields, words", [
    ({"train_labels": "masks"}, "class names"),  # index PNGs hold bare indices
    ({"train_labels": "masks", "labels_format": "kitti", "classes": "a,b"}, "not a segmentation format"),
    ({"train_labels": "a.json", "mask_colors": "c.txt"}, "mask_colors is for colour-mask folders"),
    ({"labels_format": "voc", "train_labels": "masks"}, "train_labels cannot be used"),
    ({"labels_format": "coco"}, "needs train_labels"),
])
def test_a_segmentation_spec_that_cannot_be_built_is_refused(fields, words):
    with pytest.raises(ValidationError, match=words):
        DatasetSpec.model_validate({**BASE, **fields})


@pytest.mark.parametrize("task", ["classification", "detection"])
def test_a_colour_table_is_for_segmentation_only(task):
    fields = {"train_labels": "labels"} if task == "detection" else {}
    with pytest.raises(ValidationError, match="mask_colors"):
        DatasetSpec.model_validate({**BASE, **fields, "task": task, "mask_colors": "c.txt"})


def test_rest_takes_the_colour_table_inside_the_data_roots_only(settings, client_for, tmp_path):
    root = settings.data_roots[0]
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    (root / "colours.txt").write_text("0,0,0 background\n255,0,0 square\n")
    fields = {"name": "x", "task": "segmentation", "train_folder": str(root / "images"),
              "train_labels": str(root / "masks")}
    with client_for(settings, run_scheduler=False) as client:
        inside = client.post("/api/datasets", json={**fields, "mask_colors": str(root / "colours.txt")})
        outside = client.post("/api/datasets", json={**fields, "mask_colors": str(tmp_path / "elsewhere.txt")})
    assert inside.status_code == 201, inside.text
    assert outside.status_code in (400, 403, 422) and "outside the data roots" in outside.text


def test_a_colour_table_name_past_the_bound_fails_the_build(tmp_path):
    from trainyard.datasets.collect import DatasetError
    from trainyard.datasets.segmentation.colours import read_colour_table

    table = tmp_path / "colours.txt"
    table.write_text(f"0,0,0 background\n1,2,3 {'x' * 300}\n")
    with pytest.raises(DatasetError, match="over 200 characters"):
        read_colour_table(table, None)
    table.write_text("0,0,0 background\n1,2 cat\n")
    with pytest.raises(DatasetError, match="line 2: expected 'R,G,B name'"):
        read_colour_table(table, None)
