"""The frozen preprocessing object: the stored dict round-trips unchanged, older dicts load."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from trainyard.artifact.normalize import input_mean, mean_image
from trainyard.artifact.preprocessing import Preprocessing, from_document

STORED = {"width": 20, "height": 18, "channels": 3, "resize": "fill", "mean_mode": "image", "crop": 16,
          "mean": torch.full((18, 20, 3), 100.0), "scale": "0..1", "std": [0.5, 0.25, 0.125]}


def test_a_checkpoints_entry_round_trips_to_the_same_dict():
    prep = Preprocessing.from_dict(STORED)
    again = prep.to_dict()
    assert again.keys() == STORED.keys() and list(again) == list(STORED)  # same keys, same order
    assert {k: v for k, v in again.items() if k != "mean"} == {k: v for k, v in STORED.items() if k != "mean"}
    assert again["mean"] is STORED["mean"]  # the tensor itself: a rewritten checkpoint is the same
    assert isinstance(again["std"], list)  # a list, as checkpoints and JSON hold it


def test_it_is_frozen_and_replace_makes_a_copy():
    prep = Preprocessing.from_dict(STORED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        prep.crop = 8  # type: ignore[misc]
    smaller = prep.replace(crop=8)
    assert (prep.crop, smaller.crop, smaller.width) == (16, 8, 20)


def test_an_older_entry_without_the_later_fields_loads_with_what_that_version_did():
    prep = Preprocessing.from_dict({"width": 28, "height": 28, "channels": 1})
    assert (prep.resize, prep.mean_mode, prep.crop, prep.scale, prep.std, prep.mean) == (
        "squash", "none", None, "0..1", None, None)
    assert prep.input_shape == (1, 28, 28) and not prep.subtracts_mean


def test_the_json_form_has_no_mean_and_loads_back_equal():
    prep = Preprocessing.from_dict(STORED)
    cached = prep.to_dict(with_mean=False)
    assert "mean" not in cached
    back = Preprocessing.from_dict(cached)
    assert back == prep and back.mean is None  # equal in every field but the mean image
    assert back.input_shape == (3, 16, 16) and back.stored_shape == (18, 20, 3)


def test_the_mean_image_is_the_stored_one_or_zeros():
    prep = Preprocessing.from_dict(STORED)
    assert input_mean(prep).shape[-2:] == (16, 16)  # centre-cropped like the image
    assert mean_image(prep).shape == (18, 20, 3) and mean_image(prep.replace(mean=None)).max() == 0


def test_an_archive_document_is_checked_and_gives_the_image_size():
    prep, image_size = from_document({"width": 32, "height": 30, "channels": 3, "crop": 28, "mean_mode": "pixel"})
    assert (prep.width, prep.height, prep.crop, prep.mean_mode, image_size) == (32, 30, 28, "pixel", 28)
    with pytest.raises(ValueError, match=r"channels 17 is outside 1..16; mean_mode 'mode' is not one of"):
        from_document({"width": 32, "height": 30, "channels": 17, "mean_mode": "mode"})
    with pytest.raises(ValueError, match=r"depth 12 is not 8 or 16"):
        from_document({"width": 32, "height": 30, "channels": 5, "depth": 12})
    deep, _ = from_document({"width": 32, "height": 30, "channels": 5, "depth": 16})
    assert (deep.channels, deep.depth, deep.full_depth) == (5, 16, True)
    with pytest.raises(ValueError, match="missing or bad field 'channels'"):
        from_document({"width": 32, "height": 30})
    assert np.isclose(prep.replace(std=(0.5,)).to_dict()["std"][0], 0.5)


def test_an_archives_std_is_read_so_a_fine_tuned_import_is_fed_as_it_was_trained():
    prep, _ = from_document({"width": 32, "height": 32, "channels": 3, "std": [0.229, 0.224, 0.225]})
    assert prep.std == (0.229, 0.224, 0.225)
    assert from_document({"width": 32, "height": 32, "channels": 3, "std": None})[0].std is None
    for bad in ([0.2, 0.3], [0.2, 0.0, 0.3], "0.5", [float("nan")]):
        with pytest.raises(ValueError, match="std .* is not 3 positive numbers"):
            from_document({"width": 32, "height": 32, "channels": 3, "std": bad})
