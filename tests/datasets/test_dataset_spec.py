"""DatasetSpec validation and parse_size."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainyard.datasets.spec import DatasetSpec, parse_size


def test_defaults_and_round_trip():
    spec = DatasetSpec(name="flowers", train_folder="/data/flowers")
    assert (spec.version, spec.kind, spec.width, spec.height, spec.image_channels) == (1, "dataset", 256, 256, 3)
    assert (spec.resize, spec.val_percent, spec.test_percent, spec.encoding) == ("squash", 25, 0, "none")
    assert DatasetSpec.model_validate_json(spec.model_dump_json()) == spec


@pytest.mark.parametrize(
    "fields, message",
    [
        ({}, "exactly one training source"),
        ({"train_folder": "a", "train_archive": "b.zip"}, "exactly one training source"),
        ({"train_list": "t.txt"}, "labels_file"),
        ({"train_folder": "a", "val_folder": "v", "val_list": "v.txt", "labels_file": "l"}, "at most one validation"),
        ({"train_folder": "a", "val_percent": 60, "test_percent": 40}, "under 100"),
        ({"train_folder": "a", "val_percent": 101}, "less than or equal to 100"),
        ({"train_folder": "a", "resize": "stretch"}, "squash, crop, fill, half_crop"),
        ({"train_folder": "a", "width": 0}, "greater than or equal to 1"),
        ({"train_folder": "a", "height": 5000}, "less than or equal to 4096"),
        ({"train_folder": "a", "channels": 17}, "channels"),
        ({"train_folder": "a", "encoding": "gif"}, "encoding"),
        ({"train_folder": "a", "val_pecrent": 10}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_specs(fields, message):
    with pytest.raises(ValidationError, match=message):
        DatasetSpec(name="x", **fields)


def test_list_source_with_labels():
    spec = DatasetSpec(name="x", train_list="t.txt", labels_file="l.txt", val_list="v.txt")
    assert spec.has_val_source and not spec.has_test_source


@pytest.mark.parametrize("text, size", [("256x256", (256, 256)), ("640X480", (640, 480)), (" 32 x 16 ", (32, 16))])
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text, message", [("256", "WIDTHxHEIGHT"), ("axb", "WIDTHxHEIGHT"),
                                           ("0x10", "width 0"), ("10x5000", "height 5000")])
def test_parse_size_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_size(text)
