"""Checks a model job passes before it is queued: the network builds and runs on the dataset.

Without them a custom network with a syntax error, or AlexNet on 32x32 images, is queued and
fails seconds later in its own process. Here the network is built and run forward once, at the
dataset's channels, classes and input size, in the same child-process check that "Visualize"
uses (user code never runs in the server process); answers are cached (networks/cache.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.core.errors import InvalidInput
from trainyard.datasets.info import DatasetInfo, read_dataset_info
from trainyard.jobs.context import Context
from trainyard.jobs.kinds.registry import DATASET
from trainyard.networks.cache import NetworkCache, network_cache
from trainyard.training.spec import ModelSpec, dataset_folder

DEFAULT_CLASSES = 10  # a dataset still building has no class list yet: any count checks shapes


def cache_for(ctx: Context) -> NetworkCache:
    return network_cache(ctx.settings.home / "cache" / "networks")


@dataclass(frozen=True)
class DatasetGeometry:
    """What a network is checked at: the dataset's classes (None: not known yet), channels and size."""

    classes: int | None
    channels: int
    height: int
    width: int


def dataset_geometry(ctx: Context, spec: ModelSpec) -> DatasetGeometry:
    """The geometry of the model's dataset: its info.json once built, else what its job has
    reported so far, else what its spec asks for (classes are then unknown unless it lists them)."""
    dataset_id = spec.dataset_id or ""  # a checked spec has one (ModelSpec._check)
    info = read_dataset_info(dataset_folder(spec))
    if info is None:
        job = ctx.store.get_job(dataset_id)
        reported = DatasetInfo.of(job.summary if job is not None else None)
        info = reported if reported.has_geometry else None
    if info is not None:
        return DatasetGeometry(len(info.classes) or None, info.channels or 3, info.height or 256, info.width or 256)
    asked = DATASET.find_spec(ctx.manager.folder(dataset_id))
    if asked is None:
        return DatasetGeometry(None, 3, 256, 256)
    # a detection spec may list the classes to keep (NAME or NAME=NEW): as many as it lists
    return DatasetGeometry(len(asked.classes or []) or None, asked.image_channels, asked.height, asked.width)


def input_size(spec: ModelSpec, geometry: DatasetGeometry) -> tuple[int, int]:
    """The (height, width) the network sees, as training computes it; InvalidInput if none works."""
    spec.input_side(geometry.height, geometry.width)
    return (spec.crop, spec.crop) if spec.crop else (geometry.height, geometry.width)


def check_model_spec(ctx: Context, spec: ModelSpec) -> None:
    """Raise InvalidInput naming the line or layer when the network cannot train on the dataset."""
    geometry = dataset_geometry(ctx, spec)
    height, width = input_size(spec, geometry)
    answer = cache_for(ctx).check(
        network=spec.network, source=None if spec.network else spec.network_source,
        num_classes=geometry.classes or DEFAULT_CLASSES, in_channels=geometry.channels,
        image_size=min(height, width), input_size=(height, width), timeout=ctx.settings.check_timeout_s,
        task=spec.task)
    if answer.get("ok") or answer.get("transient"):
        return  # a check that could not run says nothing about the network: training will tell
    what = f"network {spec.network}" if spec.network else "the custom network"
    shape = f"{geometry.channels}x{height}x{width}"
    raise InvalidInput(f"{what} does not run on this dataset's {shape} input: {answer['error']}")


def check_all(ctx: Context, specs: list[ModelSpec]) -> None:
    """Check each distinct network x dataset of a sweep once (learning rates do not matter)."""
    seen = set()
    for spec in specs:
        key = (spec.dataset_id, spec.network, spec.network_source, spec.crop, spec.task)
        if key not in seen:
            seen.add(key)
            check_model_spec(ctx, spec)
