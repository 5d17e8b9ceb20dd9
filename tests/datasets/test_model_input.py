"""What a model reads of an input file of another depth (datasets/model_input.py): an 8-bit
model scales a 16-bit file to 8 bits, rounded, whatever its kind; a 16-bit model scales an
8-bit file up exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import png
import pytest
import tifffile
from PIL import Image

from trainyard.datasets.images import ImageError
from trainyard.datasets.model_input import read_8bit_image, read_input

VALUES = np.array([0, 1000, 32896, 65535, 200, 40000], np.uint16)  # -> 0, 4, 128, 255, 1, 156
EXPECTED = [0, 4, 128, 255, 1, 156]


def rgb16_png(path: Path) -> Path:
    pixels = np.stack([VALUES] * 3, axis=1).reshape(1, -1)  # one row of grey-valued RGB pixels
    png.from_array(pixels, "RGB;16").save(str(path))
    return path


def test_an_8bit_model_reads_a_16bit_colour_png_rounded_not_by_its_high_byte(tmp_path: Path):
    path = rgb16_png(tmp_path / "c.png")
    for source in (path, path.read_bytes()):
        image = read_8bit_image(source, 3)
        assert image.mode == "RGB"
        assert np.asarray(image)[0, :, 0].tolist() == EXPECTED  # Pillow alone gives 1000 -> 3
    assert np.asarray(read_8bit_image(path, 1))[0].tolist() == EXPECTED  # grey from colour


def test_an_8bit_model_reads_16bit_grey_png_and_tiff(tmp_path: Path):
    Image.fromarray(VALUES[None, :]).save(tmp_path / "g.png")
    tifffile.imwrite(tmp_path / "g.tif", VALUES[None, :], photometric="minisblack")
    for name in ("g.png", "g.tif"):
        assert np.asarray(read_8bit_image(tmp_path / name, 1))[0].tolist() == EXPECTED
        assert np.asarray(read_8bit_image(tmp_path / name, 3))[0, :, 2].tolist() == EXPECTED


def test_an_8bit_n_channel_model_scales_a_16bit_tiff_and_refuses_other_counts(tmp_path: Path):
    bands = np.stack([VALUES] * 4, axis=1)[None]  # (1, 6, 4)
    tifffile.imwrite(tmp_path / "b.tif", bands, photometric="minisblack", planarconfig="contig")
    pixels = read_input(tmp_path / "b.tif", 4, 8)
    assert pixels.dtype == np.uint8 and pixels[0, :, 3].tolist() == EXPECTED
    with pytest.raises(ImageError, match="4 channel"):
        read_input(tmp_path / "b.tif", 3, 8)


def test_a_16bit_model_reads_an_8bit_file_scaled_up_exactly(tmp_path: Path):
    Image.fromarray(np.array([[0, 1, 128, 255]], np.uint8)).save(tmp_path / "e.png")
    pixels = read_input(tmp_path / "e.png", 1, 16)
    assert pixels.dtype == np.uint16 and pixels[0, :, 0].tolist() == [0, 257, 128 * 257, 65535]


def test_an_8bit_file_reads_as_before_and_a_broken_one_says_why(tmp_path: Path):
    Image.fromarray(np.array([[3, 250]], np.uint8)).save(tmp_path / "e.png")
    assert np.asarray(read_8bit_image(tmp_path / "e.png", 1)).tolist() == [[3, 250]]
    (tmp_path / "x.png").write_bytes(b"not a png")
    with pytest.raises(ImageError, match="not an image"):
        read_8bit_image(tmp_path / "x.png", 3)
