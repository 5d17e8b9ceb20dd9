"""On-device batch augmentation and crops: identity, each distortion, determinism, dtypes, devices."""

import pytest
import torch

from trainyard.artifact.normalize import center_crop_batch
from trainyard.training.augment import (
    AugmentSettings,
    augment_batch,
    hsv_to_rgb,
    is_identity,
    random_crop_batch,
    rgb_to_hsv,
)

EVERYTHING = AugmentSettings(flip="both", quarter_turns=True, rotate_degrees=15, scale_jitter=0.1,
                             noise_std=0.05, hue_shift=0.1, saturation_shift=0.1, value_shift=0.1,
                             contrast=0.2)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def images(n=8, c=3, h=12, w=12, seed=1):
    return torch.rand(n, c, h, w, generator=gen(seed))


def test_identity_settings_return_the_input():
    x = images()
    assert is_identity(AugmentSettings())
    assert augment_batch(x, AugmentSettings(), gen()) is x


@pytest.mark.parametrize("field,value", [
    ("flip", "lr"), ("quarter_turns", True), ("rotate_degrees", 5), ("scale_jitter", 0.1),
    ("noise_std", 0.01), ("hue_shift", 0.1), ("saturation_shift", 0.1), ("value_shift", 0.1),
    ("contrast", 0.1),
])
def test_any_setting_is_not_identity(field, value):
    assert not is_identity(AugmentSettings(**{field: value}))


def _variants_seen(out, x, variants):
    """For each sample, the index of the variant of x[i] it equals (asserting it equals one)."""
    seen = []
    for i in range(len(x)):
        matches = [k for k, f in enumerate(variants) if torch.equal(out[i], f(x[i]))]
        assert matches, f"sample {i} is not one of the allowed variants"
        seen.append(matches[0])
    return set(seen)


@pytest.mark.parametrize("flip,variants", [
    ("lr", [lambda t: t, lambda t: t.flip(-1)]),
    ("ud", [lambda t: t, lambda t: t.flip(-2)]),
    ("both", [lambda t: t, lambda t: t.flip(-1), lambda t: t.flip(-2), lambda t: t.flip(-1).flip(-2)]),
])
def test_flips_flip_some_samples(flip, variants):
    x = images(n=64)
    out = augment_batch(x, AugmentSettings(flip=flip), gen())
    assert _variants_seen(out, x, variants) == set(range(len(variants)))


def test_quarter_turns_square_and_not_square():
    rot = [lambda t, k=k: torch.rot90(t, k, dims=(-2, -1)) for k in range(4)]
    x = images(n=64)
    out = augment_batch(x, AugmentSettings(quarter_turns=True), gen())
    assert _variants_seen(out, x, rot) == {0, 1, 2, 3}
    wide = images(n=32, h=6, w=10)
    out = augment_batch(wide, AugmentSettings(quarter_turns=True), gen())
    assert out.shape == wide.shape
    assert _variants_seen(out, wide, [rot[0], rot[2]]) == {0, 1}


def test_noise_has_the_requested_std_and_zero_mean():
    x = torch.full((16, 3, 32, 32), 0.5)  # mid-grey: no clamping at 0.05 noise
    diff = augment_batch(x, AugmentSettings(noise_std=0.05), gen()) - x
    assert abs(diff.mean().item()) < 0.002
    assert diff.std().item() == pytest.approx(0.05, rel=0.03)


def test_results_stay_in_range_and_keep_shape_dtype_device():
    x = images()
    out = augment_batch(x, EVERYTHING, gen())
    assert out.shape == x.shape and out.dtype == x.dtype and out.device == x.device
    assert out.min() >= 0 and out.max() <= 1
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        assert augment_batch(x.to(dtype), EVERYTHING, gen()).dtype == dtype


def test_same_seed_same_output_other_seed_other_output():
    x = images()
    a = augment_batch(x, EVERYTHING, gen(7))
    b = augment_batch(x, EVERYTHING, gen(7))
    c = augment_batch(x, EVERYTHING, gen(8))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_samples_get_different_transforms():
    x = images(n=2).mean(0, keepdim=True).repeat(16, 1, 1, 1)  # 16 copies of one image
    out = augment_batch(x, AugmentSettings(rotate_degrees=30, scale_jitter=0.2), gen())
    assert len({tuple(o.flatten()[:20].tolist()) for o in out}) == 16


def test_rotation_and_scale_keep_a_constant_image_constant():
    x = torch.full((4, 3, 9, 13), 0.25)  # reflection padding: no black corners
    out = augment_batch(x, AugmentSettings(rotate_degrees=180, scale_jitter=0.5), gen())
    assert torch.allclose(out, x, atol=1e-6)


def test_hue_shift_keeps_value_and_skips_grayscale():
    x = images()
    out = augment_batch(x, AugmentSettings(hue_shift=0.5), gen())
    assert not torch.allclose(out, x)
    assert torch.allclose(out.amax(dim=1), x.amax(dim=1), atol=1e-5)  # V = max(R, G, B)
    gray = images(c=1)
    assert torch.equal(augment_batch(gray, AugmentSettings(hue_shift=0.5, value_shift=0.2), gen()), gray)


def test_rgb_hsv_round_trip_matches_colorsys():
    import colorsys
    x = images(n=2, h=4, w=4)
    hsv = rgb_to_hsv(x)
    assert torch.allclose(hsv_to_rgb(hsv), x, atol=1e-6)
    r, g, b = x[1, :, 2, 3].tolist()
    assert hsv[1, :, 2, 3].tolist() == pytest.approx(colorsys.rgb_to_hsv(r, g, b), abs=1e-6)


def test_contrast_keeps_each_sample_mean():
    x = 0.4 + 0.2 * images()  # 0.4..0.6: no clamping
    out = augment_batch(x, AugmentSettings(contrast=0.5), gen())
    assert torch.allclose(out.mean(dim=(1, 2, 3)), x.mean(dim=(1, 2, 3)), atol=1e-6)
    assert not torch.allclose(out.std(dim=(1, 2, 3)), x.std(dim=(1, 2, 3)))


def test_augment_rejects_integer_images():
    with pytest.raises(TypeError):
        augment_batch(torch.zeros(1, 3, 4, 4, dtype=torch.uint8), EVERYTHING)


def test_random_crop_takes_windows_at_per_sample_offsets():
    n, h, w, crop = 32, 10, 14, 6
    x = torch.arange(n * 2 * h * w).view(n, 2, h, w)  # every pixel unique: offsets readable
    out = random_crop_batch(x, crop, gen())
    assert out.shape == (n, 2, crop, crop) and out.dtype == x.dtype
    offsets = set()
    for i in range(n):
        first = out[i, 0, 0, 0].item() - x[i, 0, 0, 0].item()
        top, left = divmod(first, w)
        assert torch.equal(out[i], x[i, :, top:top + crop, left:left + crop])
        offsets.add((top, left))
    assert len(offsets) > n // 2  # samples get their own offsets
    assert torch.equal(random_crop_batch(x, crop, gen(3)), random_crop_batch(x, crop, gen(3)))


def test_random_crop_of_uint8_channels_last_view():
    nhwc = torch.randint(0, 256, (4, 8, 8, 3), dtype=torch.uint8, generator=gen())
    out = random_crop_batch(nhwc.permute(0, 3, 1, 2), 5, gen())
    assert out.shape == (4, 3, 5, 5) and out.dtype == torch.uint8


def test_center_crop_uses_caffe_offsets():
    x = torch.arange(2 * 1 * 7 * 8).view(2, 1, 7, 8)
    out = center_crop_batch(x, 4)
    assert torch.equal(out, x[..., 1:5, 2:6])  # (7-4)//2 = 1, (8-4)//2 = 2
    assert center_crop_batch(x, 7).shape == (2, 1, 7, 7)


def test_crop_larger_than_image_is_an_error():
    with pytest.raises(ValueError, match="crop size"):
        random_crop_batch(images(h=6, w=6), 7)
    with pytest.raises(ValueError, match="crop size"):
        center_crop_batch(images(h=6, w=6), 8)


@pytest.mark.requires_cuda(1)
def test_on_cuda_with_a_cpu_generator_and_a_cuda_generator():
    x = images().cuda()
    for generator in (gen(), torch.Generator(device="cuda").manual_seed(0)):
        out = augment_batch(x, EVERYTHING, generator)
        assert out.device == x.device and out.shape == x.shape
        assert random_crop_batch(x, 8, generator).device == x.device
    a = augment_batch(x, EVERYTHING, gen(5))
    assert torch.allclose(a.cpu(), augment_batch(x.cpu(), EVERYTHING, gen(5)), atol=1e-4)
