"""Data augmentation on the device, a whole batch at a time.

`augment_batch` takes float images (N, C, H, W) in 0..1 and applies per-sample random
distortions with batched tensor ops (no Python loop over images): flips, quarter turns, one
affine_grid + grid_sample for rotation and scale, HSV shifts (3-channel only), contrast and
Gaussian noise. Each distortion is one step in `AUGMENT_STEPS`, active when its settings are
non-zero. Random numbers come from the given torch.Generator (on its device), so one seed gives
one result; with no generator they come from torch's global RNG on x's device.

`random_crop_batch` cuts (N, C, crop, crop) windows, also without a loop, on any dtype (crop
uint8 before converting to float to move fewer bytes). `training_batch` is artifact/normalize.py's
`normalize_batch` with the two: a training batch, prepared the way validation prepares its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import torch
import torch.nn.functional as F

from trainyard.artifact.inputs import check_crop
from trainyard.artifact.normalize import normalize_batch
from trainyard.training.augment_settings import AugmentSettings


def is_identity(settings: AugmentSettings) -> bool:
    """True when `settings` change nothing, so the caller can skip augmentation entirely."""
    return not any(step.active(settings) for step in AUGMENT_STEPS)


class _Random:
    """Per-sample random draws from one generator, delivered on the images' device."""

    def __init__(self, generator: torch.Generator | None, device: torch.device):
        self.generator = generator
        self.source = generator.device if generator is not None else device
        self.device = device

    def uniform(self, n: int, low: float, high: float) -> torch.Tensor:
        u = torch.rand(n, generator=self.generator, device=self.source).to(self.device)
        return low + (high - low) * u

    def coin(self, n: int) -> torch.Tensor:
        """(n, 1, 1, 1) booleans, True with probability 1/2."""
        return (self.uniform(n, 0.0, 1.0) < 0.5).view(n, 1, 1, 1)

    def integers(self, n: int, high: int) -> torch.Tensor:
        return torch.randint(0, high, (n,), generator=self.generator, device=self.source).to(self.device)

    def normal(self, shape: torch.Size) -> torch.Tensor:
        return torch.randn(shape, generator=self.generator, device=self.source).to(self.device)


def _flip(x: torch.Tensor, s: AugmentSettings, rand: _Random) -> torch.Tensor:
    n = x.shape[0]
    if s.flip in ("lr", "both"):
        x = _flip_some(x, rand.coin(n), -1)
    if s.flip in ("ud", "both"):
        x = _flip_some(x, rand.coin(n), -2)
    return x


def _flip_some(x: torch.Tensor, coin: torch.Tensor, dim: int) -> torch.Tensor:
    """``x`` with the samples where ``coin`` (N, 1, 1, 1) is True flipped along ``dim``.

    Only the chosen samples are flipped (half the batch on average), copied into a clone,
    instead of flipping the whole batch and selecting: the same values, less work.
    """
    chosen = coin.view(-1).nonzero().view(-1)
    out = x.clone()
    if chosen.numel():
        out[chosen] = x[chosen].flip(dim)
    return out


def _quarter_turns(x: torch.Tensor, s: AugmentSettings, rand: _Random) -> torch.Tensor:
    n, _, h, w = x.shape
    # A 90-degree turn of a non-square image changes its shape, so only 0/180 are possible there.
    turns = rand.integers(n, 4) if h == w else rand.integers(n, 2) * 2
    out = x
    for k in (1, 2, 3) if h == w else (2,):
        out = torch.where((turns == k).view(n, 1, 1, 1), torch.rot90(x, k, dims=(-2, -1)), out)
    return out


def _affine(x: torch.Tensor, s: AugmentSettings, rand: _Random) -> torch.Tensor:
    n, _, h, w = x.shape
    angle = rand.uniform(n, -s.rotate_degrees, s.rotate_degrees) * (math.pi / 180)
    zoom = rand.uniform(n, 1 - s.scale_jitter, 1 + s.scale_jitter)
    cos, sin = torch.cos(angle) / zoom, torch.sin(angle) / zoom
    # theta maps output to input in normalised (-1..1) coordinates; the h/w factors make the
    # rotation a true rotation in pixels on non-square images. zoom > 1 enlarges the content.
    zero = torch.zeros_like(cos)
    theta = torch.stack([
        torch.stack([cos, -sin * h / w, zero], dim=1),
        torch.stack([sin * w / h, cos, zero], dim=1),
    ], dim=1).to(x.dtype)  # (N, 2, 3)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    # Reflection fills the corners a rotation uncovers with plausible content instead of black.
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


def _hsv(x: torch.Tensor, s: AugmentSettings, rand: _Random) -> torch.Tensor:
    if x.shape[1] != 3:
        return x  # HSV needs colour; grayscale images are left alone
    n = x.shape[0]
    h, sat, val = rgb_to_hsv(x).unbind(1)
    shift = lambda limit: rand.uniform(n, -limit, limit).view(n, 1, 1)  # noqa: E731
    h = torch.remainder(h + shift(s.hue_shift), 1.0)
    sat = (sat + shift(s.saturation_shift)).clamp(0, 1)
    val = (val + shift(s.value_shift)).clamp(0, 1)
    return hsv_to_rgb(torch.stack([h, sat, val], dim=1))


def _contrast(x: torch.Tensor, s: AugmentSettings, rand: _Random) -> torch.Tensor:
    n = x.shape[0]
    factor = rand.uniform(n, 1 - s.contrast, 1 + s.contrast).view(n, 1, 1, 1)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    return ((x - mean) * factor + mean).clamp(0, 1)


def _noise(x: torch.Tensor, s: AugmentSettings, rand: _Random) -> torch.Tensor:
    return (x + s.noise_std * rand.normal(x.shape).to(x.dtype)).clamp(0, 1)


class AugmentStep(NamedTuple):
    name: str
    active: Callable[[AugmentSettings], bool]
    apply: Callable[[torch.Tensor, AugmentSettings, _Random], torch.Tensor]


# Geometry first (cheap, exact), then colour, then noise last so it is not blurred or rescaled.
AUGMENT_STEPS: tuple[AugmentStep, ...] = (
    AugmentStep("flip", lambda s: s.flip != "none", _flip),
    AugmentStep("quarter_turns", lambda s: s.quarter_turns, _quarter_turns),
    AugmentStep("affine", lambda s: s.rotate_degrees > 0 or s.scale_jitter > 0, _affine),
    AugmentStep("hsv", lambda s: max(s.hue_shift, s.saturation_shift, s.value_shift) > 0, _hsv),
    AugmentStep("contrast", lambda s: s.contrast > 0, _contrast),
    AugmentStep("noise", lambda s: s.noise_std > 0, _noise),
)


def augment_batch(
    x: torch.Tensor, settings: AugmentSettings, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Randomly distort each image of a float (N, C, H, W) batch in 0..1; same shape, dtype, device."""
    if x.ndim != 4 or not x.is_floating_point():
        raise TypeError(f"augment_batch needs a float (N, C, H, W) tensor, got {x.dtype} {tuple(x.shape)}")
    steps = [step for step in AUGMENT_STEPS if step.active(settings)]
    if not steps:
        return x
    # Half precision is too coarse for sampling grids and HSV maths: work in float32.
    work = x if x.dtype in (torch.float32, torch.float64) else x.float()
    rand = _Random(generator, x.device)
    for step in steps:
        work = step.apply(work, settings, rand)
    return work.to(x.dtype)


def rgb_to_hsv(x: torch.Tensor) -> torch.Tensor:
    """(N, 3, H, W) RGB in 0..1 -> HSV in 0..1 (hue as a fraction of the circle)."""
    r, g, b = x.unbind(1)
    maxc, minc = x.amax(dim=1), x.amin(dim=1)
    delta = maxc - minc
    safe = torch.where(delta > 0, delta, torch.ones_like(delta))  # grays: hue 0, avoid 0/0
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    hue = torch.where(maxc == r, bc - gc, torch.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    hue = torch.where(delta > 0, torch.remainder(hue / 6.0, 1.0), torch.zeros_like(hue))
    safe_max = torch.where(maxc > 0, maxc, torch.ones_like(maxc))  # black: saturation 0
    sat = torch.where(maxc > 0, delta / safe_max, torch.zeros_like(maxc))
    return torch.stack([hue, sat, maxc], dim=1)


def hsv_to_rgb(x: torch.Tensor) -> torch.Tensor:
    """(N, 3, H, W) HSV in 0..1 -> RGB in 0..1."""
    h, s, v = x.unbind(1)
    sector = torch.floor(h * 6.0)
    f = h * 6.0 - sector
    sector = sector.long().remainder(6).unsqueeze(1)  # (N, 1, H, W)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    # For each sector 0..5, which of (v, q, p, t) each of r, g, b takes (as in colorsys).
    table = {"r": (v, q, p, p, t, v), "g": (t, v, v, q, p, p), "b": (p, p, t, v, v, q)}
    rgb = [torch.stack(table[c], dim=1).gather(1, sector) for c in "rgb"]
    return torch.cat(rgb, dim=1)


def random_crop_batch(x: torch.Tensor, crop: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random crop x crop window of each image (its own offset per sample), any dtype.

    The windows are views of ``x`` (two ``unfold``s: every window at every offset, no copy);
    one indexing by (sample, top, left) copies out exactly the N * C * crop * crop pixels kept,
    with no expanded int64 index tensors.
    """
    n, c, h, w = x.shape
    check_crop(crop, h, w)
    if crop == h == w:
        return x
    rand = _Random(generator, x.device)
    top = rand.integers(n, h - crop + 1)
    left = rand.integers(n, w - crop + 1)
    windows = x.unfold(2, crop, 1).unfold(3, crop, 1)  # (N, C, h-crop+1, w-crop+1, crop, crop)
    return windows[torch.arange(n, device=x.device), :, top, left]  # (N, C, crop, crop)


def training_batch(
    images: torch.Tensor,
    mean: torch.Tensor | None,
    crop: int | None,
    settings: AugmentSettings | None,
    generator: torch.Generator | None = None,
    channels_last: bool = False,
    std: torch.Tensor | None = None,
) -> torch.Tensor:
    """uint8 (N, H, W, C) -> network input as `normalize_batch` makes it, with a random crop and
    the augmentation of ``settings``, drawing from ``generator`` (``std``: the pretrained
    weights' scaling, if any).

    Flips come first among the steps and commute with the conversion to float, so they are done
    on the uint8 window, right after the crop's draws: the same draws in the same order, the same
    pixels, a quarter of the bytes moved.
    """
    augment = on_pixels = None
    if settings is not None and settings.flip != "none":
        on_pixels = partial(_flip_pixels, settings=settings, generator=generator)
        settings = settings.model_copy(update={"flip": "none"})  # the rest, on the floats
    if settings is not None and not is_identity(settings):
        augment = partial(augment_batch, settings=settings, generator=generator)
    return normalize_batch(images, mean, crop, random_crop=partial(random_crop_batch, generator=generator),
                           on_pixels=on_pixels, augment=augment, channels_last=channels_last, std=std)


def _flip_pixels(x: torch.Tensor, settings: AugmentSettings, generator: torch.Generator | None) -> torch.Tensor:
    """The flip step of ``settings`` on any dtype (training_batch gives it the uint8 window)."""
    return _flip(x, settings, _Random(generator, x.device))
