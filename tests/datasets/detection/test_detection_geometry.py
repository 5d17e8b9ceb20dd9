"""pad (letterbox) and squash keep boxes on their pixels, and to_original maps them back."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from trainyard.datasets.detection.geometry import PAD_VALUE, fit_image, plan_fit
from trainyard.datasets.detection.store import DetectionSplit, write_detection_split


@pytest.mark.parametrize("original, target", [((200, 100), (64, 64)), ((90, 300), (64, 48)), ((97, 96), (96, 96)),
                                              ((64, 64), (64, 64)), ((33, 7), (100, 100))])
def test_pad_keeps_the_aspect_and_centres(original, target):
    fit = plan_fit(original, *target, "pad")
    assert fit.scale_x == fit.scale_y == min(target[0] / original[0], target[1] / original[1])
    rw, rh = fit.resized
    assert rw <= target[0] and rh <= target[1] and (rw == target[0] or rh == target[1])
    assert fit.pad_x == (target[0] - rw) // 2 and fit.pad_y == (target[1] - rh) // 2


@pytest.mark.parametrize("mode", ["pad", "squash"])
def test_a_box_lands_on_its_pixels(mode):
    w, h, box = 200, 120, (40, 30, 120, 90)
    image = np.zeros((h, w, 3), np.uint8)
    image[box[1]:box[3], box[0]:box[2]] = 255
    pixels = fit_image(Image.fromarray(image), 64, 64, mode)
    fit = plan_fit((w, h), 64, 64, mode)
    x1, y1, x2, y2 = fit.boxes_to_stored(np.array([box], float))[0]
    inside = pixels[int(np.ceil(y1)) + 1: int(y2) - 1, int(np.ceil(x1)) + 1: int(x2) - 1]
    assert inside.min() == 255  # the shape fills its stored box
    ring = np.ones(pixels.shape[:2], bool)
    ring[int(y1) - 1: int(np.ceil(y2)) + 1, int(x1) - 1: int(np.ceil(x2)) + 1] = False
    assert pixels[ring].max() <= PAD_VALUE  # nothing bright outside it (background or pad)
    if mode == "pad":
        assert (pixels[: fit.pad_y] == PAD_VALUE).all() and fit.pad_y == (64 - fit.resized[1]) // 2 > 0


@pytest.mark.parametrize("mode, original", [("pad", (200, 120)), ("pad", (50, 90)), ("squash", (200, 120))])
def test_to_original_inverts_the_fit(tmp_path, mode, original):
    boxes = np.array([[0, 0, original[0], original[1]], [10.5, 7.25, 33, 41], [1, 2, 3, 4]], np.float64)
    fit = plan_fit(original, 64, 48, mode)
    stored = fit.boxes_to_stored(boxes)
    write_detection_split(tmp_path / "train", [np.zeros((48, 64, 3), np.uint8)], [stored], [np.array([0, 1, 0])],
                          np.array([fit.row()]), resize=mode)
    split = DetectionSplit(tmp_path / "train")
    np.testing.assert_allclose(split.to_original(0, stored), boxes, atol=1e-4)
    scale, pad_x, pad_y, ow, oh = split.geometry(0)
    assert (ow, oh) == original and (pad_x, pad_y) == (fit.pad_x, fit.pad_y)
    got_boxes, got_labels = split.targets(0)
    np.testing.assert_array_equal(got_boxes, stored)
    assert got_labels.tolist() == [0, 1, 0] and split.images(np.array([0])).shape == (1, 48, 64, 3)


def test_a_whole_image_box_covers_the_content_and_at_most_a_pixel_of_pad():
    fit = plan_fit((200, 120), 64, 48, "pad")  # content 64x38 (38.4 floored), pad 5 above
    x1, y1, x2, y2 = fit.boxes_to_stored(np.array([[0, 0, 200, 120]], float))[0].tolist()
    assert (x1, y1, x2) == (0, fit.pad_y, 64) and fit.pad_y + fit.resized[1] <= y2 < fit.pad_y + fit.resized[1] + 1
