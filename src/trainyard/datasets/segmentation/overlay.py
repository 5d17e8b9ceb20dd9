"""The class colours of a segmentation mask, and a mask laid over its image in them.

One palette for every picture of a mask: the Segment page colours a model's mask with it in the
browser (static/segment.js reads it from the page, so the opacity slider redraws without the
server), and the dataset page's explorer asks the server for a stored image with its mask laid
over it (``overlay_pixels``). Class 0 is the background by the datasets' convention and gets no
colour, so the picture shows through; 255 (ignore) gets none either. The blend is the browser's
own for a colour of alpha ``opacity`` drawn over the image. Torch-free.
"""

from __future__ import annotations

import numpy as np

RGB = tuple[int, int, int]
# Distinct colours for classes 1..11 (Sasha Trubetskoy's list); class 0 and every twelfth: none.
PALETTE: tuple[RGB | None, ...] = (
    None, (230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180),
    (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 190), (0, 128, 128), (170, 110, 40))
OTHER: RGB = (128, 128, 128)  # a class whose turn in the palette falls on the background's
IGNORE = 255
OPACITY = 0.5  # the Segment page's slider starts here too


def class_colour(index: int) -> RGB | None:
    """The colour of class ``index`` (None: drawn without a colour)."""
    if index == 0 or index == IGNORE:
        return None
    return PALETTE[index % len(PALETTE)] or OTHER


def class_colours(count: int) -> list[RGB | None]:
    """The colours of classes 0..count-1, as the pages' legends and segment.js read them."""
    return [class_colour(i) for i in range(count)]


def overlay_pixels(image: np.ndarray, mask: np.ndarray, opacity: float = OPACITY) -> np.ndarray:
    """(H, W, 3) uint8: the (H, W, 1 or 3) uint8 ``image`` with each pixel of a coloured class in
    ``mask`` (H, W) blended toward its class's colour by ``opacity`` (0..1)."""
    if image.shape[:2] != mask.shape:
        raise ValueError(f"mask {mask.shape} does not fit image {image.shape[:2]}")
    rgb = np.repeat(image, 3, axis=2) if image.shape[2] == 1 else image[:, :, :3]
    table = np.zeros((256, 3), np.float32)
    coloured = np.zeros(256, bool)
    for index in range(256):
        colour = class_colour(index)
        if colour is not None:
            table[index], coloured[index] = colour, True
    alpha = round(255 * min(max(opacity, 0.0), 1.0)) / 255  # a canvas keeps alpha in 8 bits
    weight = np.where(coloured[mask], alpha, 0.0).astype(np.float32)[:, :, None]
    blended = rgb.astype(np.float32) * (1 - weight) + table[mask] * weight
    return np.clip(np.rint(blended), 0, 255).astype(np.uint8)
