"""Resize modes against hand-computed DIGITS geometry (sizes, crop offsets, noise padding)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from trainyard.datasets.resize import resize_image
from trainyard.datasets.resize_plans import RESIZE_MODES, plan_resize, py2_round

COLOR = (200, 10, 60)


def solid(width: int, height: int) -> Image.Image:
    return Image.new("RGB", (width, height), COLOR)


def gradient(width: int, height: int) -> Image.Image:
    """Every pixel different, so any shift in the crop shows up."""
    x = np.arange(width)[None, :].repeat(height, 0)
    y = np.arange(height)[:, None].repeat(width, 1)
    return Image.fromarray(np.stack([x * 2 % 256, y * 5 % 256, (x + y) % 256], -1).astype(np.uint8))


def is_image(rows: np.ndarray) -> bool:
    return bool(np.all(rows == COLOR))


def is_noise(rows: np.ndarray) -> bool:
    return rows.size > 0 and rows.std() > 40 and not np.any(np.all(rows == COLOR, axis=-1).all(axis=-1))


def test_registry_names():
    assert RESIZE_MODES == ("squash", "crop", "fill", "half_crop")


def test_py2_round_rounds_halves_away_from_zero():
    assert [py2_round(x) for x in (0.5, 1.5, 2.5, 2.4999, -0.5)] == [1, 2, 3, 2, -1]


# A 100x50 image into 60x60: wr = 100/60, hr = 50/60, so the image is relatively wider.
@pytest.mark.parametrize(
    "mode, resized, crop, offset",
    [
        ("squash", (60, 60), (0, 0, 60, 60), (0, 0)),
        # height matches: 100 / (50/60) = 120 wide, centre 60 start at round(60/2) = 30
        ("crop", (120, 60), (30, 0, 90, 60), (0, 0)),
        # width matches: 50 / (100/60) = 30 high, padded by (60-30)/2 = 15 above and below
        ("fill", (60, 30), (0, 0, 60, 30), (0, 15)),
        # mean ratio 1.25: 80x40; crop cols 10..70, pad 10 rows above and below
        ("half_crop", (80, 40), (10, 0, 70, 40), (0, 10)),
    ],
)
def test_plan_100x50_into_60x60(mode, resized, crop, offset):
    plan = plan_resize((100, 50), 60, 60, mode)
    assert (plan.resized, plan.crop, plan.offset) == (resized, crop, offset)


def test_squash_and_crop_fill_the_target_with_image():
    for mode in ("squash", "crop"):
        out = resize_image(solid(100, 50), 60, 60, mode, np.random.default_rng(0))
        assert out.shape == (60, 60, 3) and out.dtype == np.uint8
        assert is_image(out)


def test_fill_pads_rows_with_noise():
    out = resize_image(solid(100, 50), 60, 60, "fill", np.random.default_rng(0))
    assert is_noise(out[:15]) and is_image(out[15:45]) and is_noise(out[45:])


def test_fill_pads_columns_of_a_tall_image():
    out = resize_image(solid(50, 100), 60, 60, "fill", np.random.default_rng(0))
    assert is_noise(out[:, :15]) and is_image(out[:, 15:45]) and is_noise(out[:, 45:])


def test_half_crop_pads_and_crops():
    out = resize_image(solid(100, 50), 60, 60, "half_crop", np.random.default_rng(0))
    assert is_noise(out[:10]) and is_image(out[10:50]) and is_noise(out[50:])


@pytest.mark.parametrize("mode", ["crop", "half_crop"])
def test_cropped_pixels_equal_resize_then_crop(mode):
    """Same pixels as DIGITS's literal resize of the whole image followed by the crop."""
    image = gradient(100, 50)
    plan = plan_resize(image.size, 60, 60, mode)
    literal = np.asarray(image.resize(plan.resized, Image.Resampling.BILINEAR))
    x0, y0, x1, y1 = plan.crop
    out = resize_image(image, 60, 60, mode, np.random.default_rng(0))
    ox, oy = plan.offset
    np.testing.assert_array_equal(out[oy : oy + y1 - y0, ox : ox + x1 - x0], literal[y0:y1, x0:x1])


def test_crop_start_uses_python2_rounding():
    # 101x50 -> 60x60: 101 / (50/60) = 121.2 -> 121 wide; start round(61/2 = 30.5) = 31 (Py3: 30)
    assert plan_resize((101, 50), 60, 60, "crop").crop == (31, 0, 91, 60)


def test_fill_grows_odd_leftover_by_one():
    # 100x51 -> 60x60: 51 / (100/60) = 30.6 -> 31 high, leftover 29 is odd -> 32, pad 14
    plan = plan_resize((100, 51), 60, 60, "fill")
    assert plan.resized == (60, 32) and plan.offset == (0, 14)
    out = resize_image(solid(100, 51), 60, 60, "fill", np.random.default_rng(0))
    assert is_noise(out[:14]) and is_image(out[14:46]) and is_noise(out[46:])


def test_half_crop_grows_odd_leftover_by_one():
    # 100x52 -> 60x60: ratios 1.667, 0.867, mean 1.2667: 78.9 -> 79 wide, 41.05 -> 41 high
    # leftover 19 is odd -> 42 high, pad 9; crop start round((79 - 60) / 2 = 9.5) = 10
    plan = plan_resize((100, 52), 60, 60, "half_crop")
    assert plan.resized == (79, 42) and plan.crop == (10, 0, 70, 42) and plan.offset == (0, 9)


@pytest.mark.parametrize("mode", RESIZE_MODES)
def test_same_aspect_is_a_plain_resize(mode):
    out = resize_image(solid(120, 60), 40, 20, mode)
    assert out.shape == (20, 40, 3) and is_image(out)


@pytest.mark.parametrize("mode", RESIZE_MODES)
def test_extreme_aspect_ratio(mode):
    out = resize_image(solid(1, 3000), 32, 32, mode, np.random.default_rng(0))
    assert out.shape == (32, 32, 3)


def test_grayscale_has_one_channel():
    out = resize_image(Image.new("L", (10, 20), 9), 8, 8, "fill", np.random.default_rng(0))
    assert out.shape == (8, 8, 1)


def test_noise_is_seeded_and_below_255():
    a = resize_image(solid(100, 50), 60, 60, "fill", np.random.default_rng(7))
    b = resize_image(solid(100, 50), 60, 60, "fill", np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert a[:15].max() <= 254  # DIGITS's randint(0, 255) never draws 255


def test_right_size_is_returned_unchanged():
    image = gradient(30, 20)
    np.testing.assert_array_equal(resize_image(image, 30, 20, "crop"), np.asarray(image))


def test_unknown_mode_lists_valid_modes():
    with pytest.raises(ValueError, match="squash, crop, fill, half_crop"):
        resize_image(solid(10, 10), 5, 5, "stretch")
