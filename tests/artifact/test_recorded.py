"""What a file records about its network's input (artifact/recorded.py): a trainyard checkpoint's
input size and normalisation, read fact by fact, and nothing (never an error) from other files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainyard.artifact.recorded import RecordedInput


def test_a_checkpoint_records_its_crop_and_its_channel_mean_and_std():
    mean = torch.empty(18, 20, 3)
    mean[:] = torch.tensor([51.0, 102.0, 153.0])
    entry = {"width": 20, "height": 18, "channels": 3, "resize": "fill", "mean_mode": "image", "crop": 16,
             "mean": mean, "scale": "0..1", "std": [0.5, 0.25, 0.125]}
    recorded = RecordedInput.of_loaded({"model": {}, "preprocess": entry})
    assert recorded.input_size == (3, 16, 16)  # the crop the network saw, not the stored 20x18
    means, stds = recorded.normalisation
    assert means == pytest.approx([0.2, 0.4, 0.6]) and stds == [0.5, 0.25, 0.125]


def test_an_old_entry_without_std_or_crop_gives_the_image_size_and_std_one():
    entry = {"width": 28, "height": 24, "channels": 1, "resize": "squash", "mean_mode": "none", "crop": None,
             "mean": None}
    recorded = RecordedInput.of_loaded({"preprocess": entry})
    assert recorded.input_size == (1, 24, 28)
    assert recorded.normalisation == ([0.0], [1.0])  # no mean subtracted: fed pixel / 255


def test_a_per_pixel_mean_image_counts_by_its_channel_average():
    rng = np.random.default_rng(0)
    image = rng.uniform(0, 255, (6, 5, 3)).astype(np.float32)
    recorded = RecordedInput.of_loaded({"preprocess": {"width": 5, "height": 6, "channels": 3,
                                                       "mean_mode": "image", "mean": image}})
    means, stds = recorded.normalisation
    assert means == pytest.approx(list(image.reshape(-1, 3).mean(axis=0) / 255.0), rel=1e-6)
    assert means[0] != pytest.approx(means[1])  # per channel, not one number for all
    assert stds == [1.0, 1.0, 1.0]


def test_a_dropped_mean_says_no_normalisation_but_still_the_size():
    entry = {"width": 8, "height": 8, "channels": 3, "mean_mode": "image", "mean": None}
    assert RecordedInput.of_loaded({"preprocess": entry}) == RecordedInput((3, 8, 8), None)


def test_a_partial_entry_gives_the_facts_it_holds():
    mean = torch.full((4, 4, 3), 127.5)
    recorded = RecordedInput.of_loaded({"preprocess": {"mean": mean, "mean_mode": "pixel", "std": [0.2]}})
    assert recorded.input_size is None  # no size recorded: the network's default applies
    assert recorded.normalisation == ([0.5, 0.5, 0.5], [0.2])  # channels from the mean image


@pytest.mark.parametrize("loaded", [
    [1, 2], {"model": {}}, {"preprocess": None}, {"preprocess": [3, 4]},
    {"preprocess": {"width": 8}},  # no size, no mean mode
    {"preprocess": {"width": "eight", "height": 8, "channels": 3, "mean_mode": "none", "std": 5}},
])
def test_files_that_record_nothing_usable_give_nothing(loaded):
    assert RecordedInput.of_loaded(loaded) == RecordedInput(None, None)


def test_a_file_is_read_unless_it_holds_only_tensors_or_is_not_a_checkpoint(tmp_path):
    saved = tmp_path / "tuned.pt"
    torch.save({"preprocess": {"width": 8, "height": 8, "channels": 1, "mean_mode": "none"}}, saved)
    assert RecordedInput.of_file(saved) == RecordedInput((1, 8, 8), ([0.0], [1.0]))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    saved.rename(tmp_path / "tuned.safetensors")
    assert RecordedInput.of_file(tmp_path / "junk.pt") == RecordedInput.of_file(tmp_path / "tuned.safetensors") \
        == RecordedInput()
