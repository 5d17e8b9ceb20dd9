"""Resize modes with DIGITS's exact geometry: squash, crop, fill and half_crop (the plans only).

The arithmetic follows DIGITS (digits/utils/image.py, ``resize_image``), which ran on Python 2:
its ``round()`` rounds halves away from zero, and its padding used integer division. With
``wr = src_w / width`` and ``hr = src_h / height``:

- squash: plain resize to width x height (also used for every mode when wr == hr).
- crop: resize keeping the aspect so the image covers the target, then centre-crop the long
  side, starting at round((resized - target) / 2).
- fill: resize keeping the aspect so the image fits inside (short side rounded, then grown by
  one pixel if the leftover is odd), and pad both ends of the short side with uniform noise.
- half_crop: resize by the mean of wr and hr (the same odd-leftover rule), centre-crop the long
  side and pad the short side with noise.

The noise is uniform in 0..254 (DIGITS's ``randint(0, 255)``), so a network does not learn the
padding as a feature. Interpolation is bilinear, DIGITS's default.

Pure arithmetic, no numpy or Pillow: spec validation reads the plans from here without paying for those
imports (the mode names are core/vocabulary.py's); datasets/resize.py applies a plan to pixels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from trainyard.core.registry import Registry, UnknownName
from trainyard.core.vocabulary import RESIZE_MODES


def py2_round(x: float) -> int:
    """Round half away from zero, like Python 2's round() that DIGITS used."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


@dataclass(frozen=True)
class Plan:
    """How one source image maps onto the target.

    The source is resized to ``resized`` (w, h); the window ``crop`` (x0, y0, x1, y1) of the
    resized image is kept; it is placed at ``offset`` (x, y) in the target, and everything
    outside it is noise.
    """

    resized: tuple[int, int]
    crop: tuple[int, int, int, int]
    offset: tuple[int, int]


def _plan_squash(w: int, h: int, width: int, height: int) -> Plan:
    return Plan((width, height), (0, 0, width, height), (0, 0))


def _plan_crop(w: int, h: int, width: int, height: int) -> Plan:
    wr, hr = w / width, h / height
    if wr > hr:  # relatively wider: match heights, cut the sides
        rw = py2_round(w / hr)
        start = py2_round((rw - width) / 2.0)
        return Plan((rw, height), (start, 0, start + width, height), (0, 0))
    rh = py2_round(h / wr)
    start = py2_round((rh - height) / 2.0)
    return Plan((width, rh), (0, start, width, start + height), (0, 0))


def _plan_fill(w: int, h: int, width: int, height: int) -> Plan:
    wr, hr = w / width, h / height
    if wr > hr:  # relatively wider: match widths, pad top and bottom
        rh = _even_leftover(max(1, py2_round(h / wr)), height)
        return Plan((width, rh), (0, 0, width, rh), (0, (height - rh) // 2))
    rw = _even_leftover(max(1, py2_round(w / hr)), width)
    return Plan((rw, height), (0, 0, rw, height), ((width - rw) // 2, 0))


def _plan_half_crop(w: int, h: int, width: int, height: int) -> Plan:
    wr, hr = w / width, h / height
    ratio = (wr + hr) / 2.0
    rw, rh = max(1, py2_round(w / ratio)), max(1, py2_round(h / ratio))
    if wr > hr:  # too wide: cut the sides, pad top and bottom
        rh = _even_leftover(rh, height)
        start = py2_round((rw - width) / 2.0)
        return Plan((rw, rh), (start, 0, start + width, rh), (0, (height - rh) // 2))
    rw = _even_leftover(rw, width)
    start = py2_round((rh - height) / 2.0)
    return Plan((rw, rh), (0, start, rw, start + height), ((width - rw) // 2, 0))


def _even_leftover(size: int, target: int) -> int:
    """Grow ``size`` by one if the space left in ``target`` is odd, so both pads are equal."""
    return size + 1 if (target - size) % 2 == 1 else size


PlanFn = Callable[[int, int, int, int], Plan]


class UnknownResizeMode(UnknownName):
    """A resize mode that does not exist."""


# The names are core's (core/vocabulary.py), in its order; each has its plan here. A name
# without a plan fails this import; RESIZE_MODES stays importable from here for datasets' users.
_PLANS: dict[str, PlanFn] = {"squash": _plan_squash, "crop": _plan_crop, "fill": _plan_fill,
                             "half_crop": _plan_half_crop}
RESIZE: Registry[PlanFn] = Registry("resize mode", error=UnknownResizeMode, plural="modes")
for _mode in RESIZE_MODES:
    RESIZE.register(_mode, _PLANS[_mode])


# The modes whose kept window can be smaller than the target: the rest is filled with noise.
NOISY_MODES = frozenset({"fill", "half_crop"})


def plan_resize(src_size: tuple[int, int], width: int, height: int, mode: str) -> Plan:
    """Return the geometry for resizing an image of ``src_size`` (w, h) to width x height."""
    plan = RESIZE.get(mode)
    w, h = src_size
    if w / width == h / height:  # same aspect (DIGITS compares the float ratios): plain resize
        return _plan_squash(w, h, width, height)
    return plan(w, h, width, height)
