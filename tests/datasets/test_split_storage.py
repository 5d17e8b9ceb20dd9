"""SplitWriter / open_split round trips for every encoding, batches, mean image."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import open_split, save_mean, split_names


def write(folder: Path, images: np.ndarray, labels, encoding: str, mean: bool = False) -> SplitWriter:
    n, h, w, c = images.shape
    writer = SplitWriter(folder, h, w, c, encoding, mean=mean)
    for image, label in zip(images, labels):
        writer.append(image, label)
    writer.close()
    return writer


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("encoding", ["none", "png"])
def test_lossless_round_trip(tmp_path: Path, rng, encoding: str, channels: int):
    images = rng.integers(0, 256, (9, 6, 5, channels), dtype=np.uint8)
    write(tmp_path / "ds" / "train", images, range(9), encoding)
    reader = open_split(tmp_path / "ds", "train")
    assert len(reader) == 9 and reader.shape == (6, 5, channels)
    assert reader.labels.dtype == np.int64 and reader.labels.tolist() == list(range(9))
    np.testing.assert_array_equal(reader.read(4), images[4])
    order = [7, 0, 7, 3, 8]  # unsorted, with a repeat
    batch = reader.read_batch(order)
    assert batch.shape == (5, 6, 5, channels) and batch.dtype == np.uint8
    np.testing.assert_array_equal(batch, images[order])


def test_none_encoding_is_a_raw_memmap(tmp_path: Path, rng):
    images = rng.integers(0, 256, (4, 3, 2, 3), dtype=np.uint8)
    write(tmp_path / "train", images, [0, 1, 0, 1], "none")
    raw = np.fromfile(tmp_path / "train" / "images.u8", np.uint8).reshape(4, 3, 2, 3)
    np.testing.assert_array_equal(raw, images)
    reader = open_split(tmp_path, "train")
    assert isinstance(reader._images, np.memmap) and not reader._images.flags.writeable


def test_jpeg_is_close(tmp_path: Path):
    smooth = np.tile(np.linspace(0, 255, 32, dtype=np.uint8)[None, :, None], (32, 1, 3))
    write(tmp_path / "val", np.stack([smooth, smooth]), [0, 1], "jpeg")
    reader = open_split(tmp_path, "val")
    assert np.abs(reader.read(1).astype(int) - smooth).max() < 10
    offsets = np.load(tmp_path / "val" / "offsets.npy")
    assert offsets.dtype == np.int64 and len(offsets) == 3 and offsets[0] == 0


def test_mean_is_exact_and_saved(tmp_path: Path, rng):
    images = rng.integers(0, 256, (7, 4, 3, 3), dtype=np.uint8)
    writer = write(tmp_path / "train", images, [0] * 7, "none", mean=True)
    mean = writer.mean()
    assert mean.dtype == np.float32 and mean.shape == (4, 3, 3)
    np.testing.assert_allclose(mean, images.mean(axis=0), rtol=1e-6)
    save_mean(tmp_path, mean)
    np.testing.assert_array_equal(np.load(tmp_path / "mean.npy"), mean)
    png = np.asarray(Image.open(tmp_path / "mean.png"))
    np.testing.assert_array_equal(png, np.rint(mean).astype(np.uint8))


def test_split_names_and_empty_split(tmp_path: Path):
    write(tmp_path / "train", np.zeros((1, 2, 2, 3), np.uint8), [0], "none")
    SplitWriter(tmp_path / "test", 2, 2, 3, "none").close()
    assert split_names(tmp_path) == ["train", "test"]
    empty = open_split(tmp_path, "test")
    assert len(empty) == 0 and empty.read_batch([]).shape == (0, 2, 2, 3)
    with pytest.raises(FileNotFoundError, match="no 'val' split"):
        open_split(tmp_path, "val")


def test_wrong_shape_is_refused(tmp_path: Path):
    writer = SplitWriter(tmp_path / "train", 4, 4, 3, "none")
    with pytest.raises(ValueError, match="expected uint8"):
        writer.append(np.zeros((4, 5, 3), np.uint8), 0)
    writer.close()
