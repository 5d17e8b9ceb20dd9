"""16-bit and N-channel images: built at full depth with no option, the depth recorded and
checked, a channel count that does not fit reported per file (datasets/deep.py, told.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

from trainyard.core.events import EventWriter
from trainyard.datasets.build import build_dataset
from trainyard.datasets.deep import load_array, probe, resize_array
from trainyard.datasets.info import read_dataset_info
from trainyard.datasets.preview import display_pixels, preview_resize
from trainyard.datasets.spec import DatasetSpec
from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import open_split


def gray16(path: Path, value: int, size: int = 12, seed: int = 0) -> Path:
    """A 16-bit grayscale PNG ("I;16") around ``value``."""
    rng = np.random.default_rng(seed)
    pixels = (value + rng.integers(-50, 50, (size, size))).astype(np.uint16)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)
    return path


def tiff(path: Path, value: int, channels: int, size: int = 12, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    pixels = (value + rng.integers(-50, 50, (size, size, channels))).astype(np.uint16)
    path.parent.mkdir(parents=True, exist_ok=True)
    if channels == 1:
        tifffile.imwrite(path, pixels[:, :, 0], photometric="minisblack")
    else:
        tifffile.imwrite(path, pixels, photometric="rgb" if channels == 3 else "minisblack",
                         planarconfig="contig")
    return path


def build(tmp_path: Path, **fields) -> tuple[dict, Path]:
    spec = DatasetSpec(**{"name": "deep", "width": 8, "height": 8, "val_percent": 25,
                          "train_folder": str(tmp_path / "images"), **fields})
    job = tmp_path / "job"
    with EventWriter(job) as events:
        return build_dataset(spec, job, events, workers=1), job / "dataset"


def test_16bit_png_folder_builds_at_16_bits_with_no_option(tmp_path: Path):
    for i in range(4):
        gray16(tmp_path / "images" / "low" / f"{i}.png", 1000, seed=i)
        gray16(tmp_path / "images" / "high" / f"{i}.png", 3000, seed=10 + i)
    info, ds = build(tmp_path)
    assert info["depth"] == 16 and info["channels"] == 1
    assert read_dataset_info(ds).depth == 16
    train = open_split(ds, "train")
    pixels = train.read_batch(range(len(train)))
    assert pixels.dtype == np.uint16
    by_class = {info["classes"][label]: pixels[train.labels == label] for label in (0, 1)}
    assert 900 < by_class["low"].mean() < 1100 and 2900 < by_class["high"].mean() < 3100
    # the channel mean and std, in 0..1 units of 65535, are those of the training pixels
    assert info["channel_mean"][0] == pytest.approx(pixels.mean() / 65535, rel=1e-3)
    assert info["channel_std"][0] == pytest.approx(pixels.std() / 65535, rel=1e-3)
    # the mean image is in 0..255 units of the full scale at any depth
    assert np.load(ds / "mean.npy").mean() == pytest.approx(pixels.mean() / 257, rel=1e-3)


def test_16bit_rgb_tiff_and_an_8bit_png_among_them(tmp_path: Path):
    for i in range(3):
        tiff(tmp_path / "images" / "a" / f"{i}.tif", 500, 3, seed=i)
        tiff(tmp_path / "images" / "b" / f"{i}.tif", 40000, 3, seed=5 + i)
    Image.new("RGB", (12, 12), (255, 0, 128)).save(tmp_path / "images" / "a" / "eight.png")
    info, ds = build(tmp_path, val_percent=0)
    assert (info["depth"], info["channels"]) == (16, 3)
    train = open_split(ds, "train")
    pixels = train.read_batch(range(len(train)))
    assert pixels.max() > 39000
    # the 8-bit file is scaled explicitly, and said: 255 -> 65535, 128 -> 128 * 257
    assert any("are 8-bit: they are scaled to 16 bits" in w for w in info["warnings"])
    assert any(tuple(p[0, 0]) == (65535, 0, 128 * 257) for p in pixels)


def test_n_channel_tiff_told_by_files_and_a_mismatch_reported(tmp_path: Path):
    for i in range(3):
        tiff(tmp_path / "images" / "a" / f"{i}.tif", 100, 5, seed=i)
        tiff(tmp_path / "images" / "b" / f"{i}.tif", 9000, 5, seed=5 + i)
    odd = tiff(tmp_path / "images" / "b" / "four.tif", 9000, 4)
    info, ds = build(tmp_path, val_percent=0)
    assert (info["depth"], info["channels"]) == (16, 5)
    assert open_split(ds, "train").shape == (8, 8, 5)
    assert len(info["channel_std"]) == 5
    assert info["skipped"] == [{"path": str(odd), "reason": "image has 4 channel(s); the dataset has 5"}]


def test_channels_given_on_the_command_line(tmp_path: Path):
    for i in range(3):
        tiff(tmp_path / "images" / "a" / f"{i}.tif", 100, 4, seed=i)
        tiff(tmp_path / "images" / "b" / f"{i}.tif", 9000, 4, seed=5 + i)
    info, _ = build(tmp_path, val_percent=0, channels=4)
    assert (info["depth"], info["channels"]) == (16, 4)


def test_a_16bit_file_in_an_8bit_dataset_is_skipped_not_cut(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("trainyard.datasets.told.SAMPLE", 2)  # the first and last file: both 8-bit
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        for i in range(3):
            path = tmp_path / "images" / name / f"{i}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(path)
    deep = gray16(tmp_path / "images" / "a" / "1x.png", 3000)
    info, _ = build(tmp_path, val_percent=0)
    assert info["depth"] == 8
    assert [s["path"] for s in info["skipped"]] == [str(deep)]
    assert "16-bit image" in info["skipped"][0]["reason"] and "--depth 16" in info["skipped"][0]["reason"]
    # told 8 bits, the user converts on purpose: nothing skipped
    (tmp_path / "job").rename(tmp_path / "first")
    info, _ = build(tmp_path, val_percent=0, depth=8)
    assert info["depth"] == 8 and info["skipped"] == []


def test_resize_keeps_values_above_255(tmp_path: Path):
    pixels = np.full((20, 30, 2), 40000, np.uint16)
    out = resize_array(pixels, 10, 10, "squash")
    assert out.dtype == np.uint16 and out.shape == (10, 10, 2) and (out == 40000).all()
    planes = tmp_path / "planes.tif"  # a band stack saved page by page: (C, H, W)
    tifffile.imwrite(planes, np.stack([np.full((6, 7), v, np.uint16) for v in (1, 2, 3, 4)]), photometric="minisblack")
    assert tifffile.TiffFile(planes).series[0].axes == "QYX"
    assert load_array(planes, 4, 16)[0, 0].tolist() == [1, 2, 3, 4]
    path = tiff(tmp_path / "x.tif", 3000, 1)
    assert load_array(path, 3, 16).shape == (12, 12, 3)
    with pytest.raises(Exception, match="3 channel"):
        load_array(tiff(tmp_path / "y.tif", 3000, 3), 5, 16)


def test_a_16bit_image_is_shown_with_a_window_not_clipped(tmp_path: Path):
    pixels = np.zeros((4, 4, 1), np.uint16)
    pixels[:2] = 1000
    pixels[2:] = 3000
    shown = display_pixels(pixels)
    assert shown.dtype == np.uint8 and set(np.unique(shown)) == {0, 255}  # dark and bright, not both 255
    bands = np.stack([np.full((2, 2), v, np.uint16) for v in (1000, 2000, 3000, 9000, 9000)], axis=2)
    assert display_pixels(bands)[0, 0].tolist() == [0, 128, 255]  # its first three channels
    assert display_pixels(bands[:, :, :2]).shape == (2, 2, 1)  # two: the first, as grey
    assert display_pixels(bands, (1000, 2000))[0, 0].tolist() == [0, 255, 255]  # a window clips outside
    data = gray16(tmp_path / "p.png", 2000, size=20).read_bytes()
    preview = np.asarray(Image.open(io.BytesIO(preview_resize(data, 10, 10, 1, "squash"))))
    assert preview.min() < 60 and preview.max() > 200  # stretched from its own min to max


def test_a_resumed_16bit_split_keeps_its_channel_statistics(tmp_path: Path):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 65535, (12, 4, 4, 2), dtype=np.uint16)
    whole = SplitWriter(tmp_path / "whole", 4, 4, 2, "none", mean=True, depth=16)
    for image in images:
        whole.append(image, 0)
    cut = SplitWriter(tmp_path / "cut", 4, 4, 2, "none", mean=True, depth=16)
    for image in images[:7]:
        cut.append(image, 0)
    state = json.loads(json.dumps(cut.checkpoint()))  # as resume.json keeps it
    cut.append(images[7], 0)  # written after the checkpoint: lost with the process
    resumed = SplitWriter.resume(tmp_path / "cut", 4, 4, 2, "none", state, mean=True, depth=16)
    for image in images[7:]:
        resumed.append(image, 0)
    assert resumed.channel_stats() == whole.channel_stats()
    resumed.close()
    stored = np.fromfile(tmp_path / "cut" / "images.u16", np.uint16).reshape(images.shape)
    assert (stored == images).all()


def rgb16_png(path: Path, rgb: tuple[int, int, int], alpha: int | None = None, size: int = 10) -> Path:
    """A 16-bit colour PNG (RGB, or RGBA with ``alpha``), which Pillow would read as 8 bits."""
    import png

    planes = list(rgb) + ([alpha] if alpha is not None else [])
    pixels = np.tile(np.array(planes, np.uint16), (size, size, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        png.Writer(size, size, greyscale=False, alpha=alpha is not None, bitdepth=16).write(
            f, pixels.reshape(size, -1).tolist())
    return path


def test_16bit_rgb_png_folder_builds_at_16_bits(tmp_path: Path):
    for i in range(3):
        rgb16_png(tmp_path / "images" / "teal" / f"{i}.png", (300, 40000 + i, 50000))
        rgb16_png(tmp_path / "images" / "plum" / f"{i}.png", (40000, 300, 41000 + i))
    half = rgb16_png(tmp_path / "images" / "plum" / "half.png", (0, 0, 0), alpha=32768)
    info, ds = build(tmp_path, val_percent=0)
    assert (info["depth"], info["channels"]) == (16, 3) and info["skipped"] == []
    train = open_split(ds, "train")
    colours = {tuple(int(v) for v in p[0, 0]) for p in train.read_batch(range(len(train)))}
    assert (300, 40000, 50000) in colours and (40000, 300, 41002) in colours
    assert (32767, 32767, 32767) in colours  # black at half alpha over white, at 16 bits
    assert load_array(half, 3, 16)[0, 0].tolist() == [32767, 32767, 32767]
    assert probe(half) == (16, 3)  # its alpha is no channel of the dataset


def test_appending_to_a_16bit_dataset_keeps_16_bits(tmp_path: Path):
    for i in range(3):
        gray16(tmp_path / "images" / "low" / f"{i}.png", 1000, seed=i)
        gray16(tmp_path / "images" / "high" / f"{i}.png", 3000, seed=10 + i)
    parent, ds = build(tmp_path, val_percent=0)
    (tmp_path / "job").rename(tmp_path / "v1")
    for i in range(2):
        gray16(tmp_path / "more" / "mid" / f"{i}.png", 2000, seed=20 + i)
    spec = DatasetSpec(name="v2", width=8, height=8, val_percent=0, train_folder=str(tmp_path / "more"),
                       parent_dir=str(tmp_path / "v1" / "dataset"))
    with EventWriter(tmp_path / "v2") as events:
        child = build_dataset(spec, tmp_path / "v2", events, workers=1)
    assert (child["depth"], child["channels"], child["classes"]) == (16, 1, ["high", "low", "mid"])
    train = open_split(tmp_path / "v2" / "dataset", "train")
    pixels = train.read_batch(range(len(train)))
    assert pixels.dtype == np.uint16 and 1900 < pixels[train.labels == 2].mean() < 2100
    assert len(child["channel_std"]) == 1

