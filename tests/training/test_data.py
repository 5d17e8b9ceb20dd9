"""The batch loader and the shared preprocessing: order, resume, sharding, normalisation, inference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from model_helpers import make_dataset
from PIL import Image

from trainyard.artifact.normalize import (
    mean_tensor,
    preprocess_images,
)
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.datasets.storage import open_split
from trainyard.training.augment import AugmentSettings, training_batch
from trainyard.training.data import BatchLoader


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("ds") / "rgb", train=50, val=10, size=12, channels=3)


def all_batches(loader, epoch=0, start=0):
    return [(x.clone(), y.clone()) for x, y in loader.batches(epoch, start)]


def test_train_order_is_a_seeded_permutation_per_epoch(dataset):
    loader = BatchLoader(open_split(dataset, "train"), 8, train=True, seed=3)
    assert len(loader) == 6  # 50 // 8: the incomplete last batch is dropped
    first, again, second = loader.order(0), loader.order(0), loader.order(1)
    assert sorted(first) == list(range(50))
    assert np.array_equal(first, again) and not np.array_equal(first, second)
    assert not np.array_equal(first, BatchLoader(open_split(dataset, "train"), 8, train=True, seed=4).order(0))


def test_labels_follow_images(dataset):
    reader = open_split(dataset, "train")
    loader = BatchLoader(reader, 8, train=True, seed=0, prefetch=0)
    order = loader.order(2)
    batches = all_batches(loader, epoch=2)
    labels = torch.cat([y for _, y in batches]).numpy()
    assert np.array_equal(labels, reader.labels[order[: len(labels)]])


def test_starting_mid_epoch_gives_the_same_batches(dataset):
    """Exact resume: batch k of an epoch is the same whether or not batches 0..k-1 were read."""
    augment = AugmentSettings(flip="both", noise_std=0.05, rotate_degrees=10)
    loader = BatchLoader(open_split(dataset, "train"), 8, train=True, seed=5, crop=10, augment=augment)
    full = all_batches(loader, epoch=1)
    resumed = all_batches(loader, epoch=1, start=4)
    assert len(resumed) == len(full) - 4
    for (x1, y1), (x2, y2) in zip(full[4:], resumed):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert not torch.equal(full[0][0], all_batches(loader, epoch=2)[0][0])


def test_shards_are_disjoint_and_equal(dataset):
    reader = open_split(dataset, "train")
    ranks = [BatchLoader(reader, 4, train=True, seed=1, rank=r, world_size=3) for r in range(3)]
    orders = [loader.order(0) for loader in ranks]
    assert {len(o) for o in orders} == {16}  # 50 -> 48 images: every rank takes 16
    assert len(set(np.concatenate(orders))) == 48
    assert {len(loader) for loader in ranks} == {4}


def test_validation_uses_every_image_in_order(dataset):
    loader = BatchLoader(open_split(dataset, "val"), 4)
    batches = all_batches(loader)
    assert len(loader) == len(batches) == 3 and [len(y) for _, y in batches] == [4, 4, 2]
    assert torch.cat([y for _, y in batches]).tolist() == open_split(dataset, "val").labels.tolist()


def test_normalisation_scale_mean_and_centre_crop(dataset):
    reader = open_split(dataset, "val")
    mean = np.load(dataset / "mean.npy")
    loader = BatchLoader(reader, 10, mean=mean_tensor(mean, "image", 8), crop=8)
    x, _ = next(loader.batches())
    assert x.shape == (10, 3, 8, 8) and x.dtype == torch.float32
    expected = (reader.read(3).astype(np.float32) / 255 - mean / 255)[2:10, 2:10].transpose(2, 0, 1)
    assert np.allclose(x[3].numpy(), expected, atol=1e-6)


def test_pixel_mean_is_per_channel(dataset):
    mean = np.load(dataset / "mean.npy")
    pixel = mean_tensor(mean, "pixel", None)
    assert pixel.shape == (1, 3, 1, 1)
    assert np.allclose(pixel.flatten().numpy(), mean.mean(axis=(0, 1)) / 255, atol=1e-6)
    assert mean_tensor(mean, "none", None) is None


def test_random_crops_differ_per_sample_and_stay_in_bounds():
    images = torch.arange(16 * 16, dtype=torch.uint8).view(1, 16, 16, 1).repeat(32, 1, 1, 1)
    generator = torch.Generator().manual_seed(0)
    x = training_batch(images, None, 8, None, generator)
    corners = {round(float(v) * 255) for v in x[:, 0, 0, 0]}
    assert x.shape == (32, 1, 8, 8) and len(corners) > 5
    assert all(c // 16 <= 8 and c % 16 <= 8 for c in corners)


def test_png_split_reads_like_raw(tmp_path):
    raw = make_dataset(tmp_path / "raw", train=20, val=6, size=12, encoding="none")
    png = make_dataset(tmp_path / "png", train=20, val=6, size=12, encoding="png")
    a = next(BatchLoader(open_split(raw, "train"), 8, train=True, seed=2).batches())[0]
    b = next(BatchLoader(open_split(png, "train"), 8, train=True, seed=2).batches())[0]
    assert torch.equal(a, b)


@pytest.mark.parametrize("mean_mode, crop", [("image", 8), ("pixel", None), ("none", 10)])
def test_preprocess_images_equals_the_validation_batch(dataset, mean_mode, crop):
    """Server-side classification must see exactly what validation saw for the same image."""
    reader = open_split(dataset, "val")
    mean = np.load(dataset / "mean.npy")
    preprocess = Preprocessing(width=12, height=12, channels=3, resize="squash", mean_mode=mean_mode, crop=crop,
                               mean=torch.from_numpy(mean))
    loader = BatchLoader(reader, 10, mean=mean_tensor(mean, mean_mode, crop), crop=crop)
    batch, _ = next(loader.batches())
    images = [Image.fromarray(reader.read(i)) for i in range(len(reader))]
    assert torch.equal(preprocess_images(images, preprocess), batch)


def test_preprocess_images_resizes_and_converts(dataset):
    preprocess = Preprocessing(width=12, height=12, channels=3, resize="fill")
    image = Image.new("L", (40, 20), 128)  # grayscale, wrong size and aspect
    x = preprocess_images([image, image], preprocess)
    assert x.shape == (2, 3, 12, 12)
    assert torch.equal(x[0], x[1])  # the fill padding noise is seeded: same image, same input
    assert torch.allclose(x[0, :, 6, 6], torch.full((3,), 128 / 255))


def test_a_small_set_keeps_its_last_batch_and_a_large_one_drops_only_a_handful(tmp_path):
    """115 images in batches of 64 trained on 64 a epoch, 51 left out silently (issue 31.9)."""
    small = BatchLoader(open_split(make_dataset(tmp_path / "small", train=115, val=4, size=8, channels=1),
                                   "train"), 64, train=True, seed=1)
    seen = np.concatenate([y.numpy() for _, y in small.batches(0)])
    assert len(small) == 2 and len(seen) == 115 and small.dropped_per_epoch == 0
    large = BatchLoader(open_split(make_dataset(tmp_path / "large", train=650, val=4, size=8, channels=1),
                                   "train"), 64, train=True, seed=1)
    assert len(large) == 10 and large.dropped_per_epoch == 10  # 1.5 %: steady shapes win
    one_over = BatchLoader(open_split(make_dataset(tmp_path / "one", train=17, val=4, size=8, channels=1),
                                      "train"), 8, train=True, seed=1)
    assert one_over.dropped_per_epoch == 1  # a batch of one image would break BatchNorm
