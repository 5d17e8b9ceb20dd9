"""The random crop and flip (unfold + one index; flip of the chosen samples only, on the uint8
window) give bit for bit what the former versions gave (expanded int64 gathers; flip of the
whole float batch then a select) for the same generator: same draws, same pixels, so runs stay
reproducible and a resume continues exactly."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from trainyard.artifact.normalize import normalize_batch
from trainyard.training.augment import AugmentSettings, augment_batch, random_crop_batch, training_batch


def gather_crop(x: torch.Tensor, crop: int, generator: torch.Generator) -> torch.Tensor:
    """The former random_crop_batch, kept here as the reference."""
    n, c, h, w = x.shape
    top = torch.randint(0, h - crop + 1, (n,), generator=generator)
    left = torch.randint(0, w - crop + 1, (n,), generator=generator)
    offsets = torch.arange(crop)
    rows = (top[:, None] + offsets).view(n, 1, crop, 1).expand(n, c, crop, w)
    x = x.gather(2, rows)
    cols = (left[:, None] + offsets).view(n, 1, 1, crop).expand(n, c, crop, crop)
    return x.gather(3, cols)


def where_flip(x: torch.Tensor, flip: str, generator: torch.Generator) -> torch.Tensor:
    """The former flip step: flip everything, keep the flipped samples where a coin says so."""
    n = x.shape[0]
    coin = lambda: (torch.rand(n, generator=generator) < 0.5).view(n, 1, 1, 1)  # noqa: E731
    if flip in ("lr", "both"):
        x = torch.where(coin(), x.flip(-1), x)
    if flip in ("ud", "both"):
        x = torch.where(coin(), x.flip(-2), x)
    return x


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize(("n", "c", "h", "w", "crop"), [(16, 3, 40, 48, 32), (7, 1, 9, 9, 4), (1, 3, 8, 12, 8)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_crop_equals_the_gather_version(n, c, h, w, crop, channels_last):
    nhwc = torch.randint(0, 256, (n, h, w, c), dtype=torch.uint8, generator=gen(1))
    x = nhwc.permute(0, 3, 1, 2) if channels_last else nhwc.permute(0, 3, 1, 2).contiguous()
    for seed in range(5):
        ours, reference = random_crop_batch(x, crop, gen(seed)), gather_crop(x, crop, gen(seed))
        assert ours.shape == (n, c, crop, crop)
        assert torch.equal(ours, reference)


@pytest.mark.parametrize("flip", ["lr", "ud", "both"])
@pytest.mark.parametrize("n", [1, 5, 32])
def test_flip_equals_the_where_version(flip, n):
    x = torch.rand(n, 3, 6, 10, generator=gen(2))
    for seed in range(5):
        ours = augment_batch(x, AugmentSettings(flip=flip), gen(seed))
        assert torch.equal(ours, where_flip(x, flip, gen(seed)))
    assert torch.equal(x, torch.rand(n, 3, 6, 10, generator=gen(2)))  # the input is left as it was


@pytest.mark.parametrize("crop", [None, 12])
@pytest.mark.parametrize("settings", [AugmentSettings(flip="both"),
                                      AugmentSettings(flip="lr", noise_std=0.05, contrast=0.2)])
def test_training_batch_flips_the_uint8_window_as_the_float_batch_was_flipped(crop, settings):
    images = torch.randint(0, 256, (9, 16, 14, 3), dtype=torch.uint8, generator=gen(3))
    mean = torch.rand(1, 3, 16, 14, generator=gen(4))
    mean = mean[..., 2:14, 1:13] if crop else mean
    for seed in range(4):
        before = gen(seed)  # the former order: crop, convert, then every step on the floats
        reference = normalize_batch(images, mean, crop, random_crop=partial(random_crop_batch, generator=before),
                                    augment=partial(augment_batch, settings=settings, generator=before))
        ours = training_batch(images, mean, crop, settings, gen(seed))
        assert torch.equal(ours, reference)
