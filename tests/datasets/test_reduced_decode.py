"""A JPEG reduced by libjpeg before the resize (Image.draft) against a full decode: the same
shape, pixels within a grey level or so on photo-sized images; exactly equal where no reduction
of 2x or more is possible, and for other formats."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from trainyard.datasets.reduced import load_resized
from trainyard.datasets.resize_plans import RESIZE_MODES

SIZES = [(256, 256), (224, 160), (64, 64)]


def photo(path, w: int, h: int, seed: int = 1, orientation: int | None = None, fmt: str = "JPEG"):
    """A photo-like image: a smooth random colour field plus sensor-like noise."""
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (5, 7, 3), dtype=np.uint8))
    smooth = np.asarray(coarse.resize((w, h), Image.Resampling.BICUBIC), dtype=np.int16)
    img = Image.fromarray(np.clip(smooth + rng.normal(0, 6, smooth.shape), 0, 255).astype(np.uint8))
    options = {"quality": 90} if fmt == "JPEG" else {}
    if orientation:
        exif = Image.Exif()
        exif[0x0112] = orientation
        options["exif"] = exif.tobytes()
    img.save(path, fmt, **options)
    return path


def both(path, size, mode, channels=3):
    args = (path, channels, *size, mode)
    reduced = load_resized(*args, np.random.default_rng(0), reduce=True)
    full = load_resized(*args, np.random.default_rng(0), reduce=False)
    assert reduced.shape == full.shape == (size[1], size[0], channels)
    return np.abs(reduced.astype(np.int16) - full.astype(np.int16))


@pytest.mark.parametrize("mode", RESIZE_MODES)
@pytest.mark.parametrize(("w", "h", "orientation"), [(2000, 1500, None), (1999, 1333, 6)])
def test_photo_sized_jpegs_differ_by_about_a_grey_level(tmp_path, mode, w, h, orientation):
    path = photo(tmp_path / "p.jpg", w, h, orientation=orientation)
    for size in SIZES:
        diff = both(path, size, mode)
        # Measured: mean 0.1-0.4, max 3 upright; mean up to 1.1, max 6 when EXIF turns the image
        # (libjpeg's partial last block moves to the other edge and shifts the grid a little).
        assert diff.mean() <= (1.5 if orientation else 0.6), (size, diff.mean())
        assert diff.max() <= (8 if orientation else 4), (size, diff.max())
        assert diff.max() > 0  # the reduced decode really was used


@pytest.mark.parametrize("mode", RESIZE_MODES)
def test_under_2x_and_non_jpeg_are_exactly_the_full_decode(tmp_path, mode):
    small = photo(tmp_path / "small.jpg", 400, 300)
    big_png = photo(tmp_path / "big.png", 1200, 900, fmt="PNG")
    for size in SIZES[:2]:
        assert both(small, size, mode).max() == 0
    for size in SIZES:
        assert both(big_png, size, mode).max() == 0


def test_grayscale_reduced_decode(tmp_path):
    path = photo(tmp_path / "p.jpg", 2000, 1500)
    diff = both(path, (128, 128), "crop", channels=1)
    assert diff.mean() <= 0.6 and diff.max() <= 4
