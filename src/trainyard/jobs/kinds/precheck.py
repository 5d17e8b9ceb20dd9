"""Checks a model job passes before it is queued: the network builds and runs on the dataset.

Without them a custom network with a syntax error, or AlexNet on 32x32 images, is queued and
fails seconds later in its own process. Here the network is built and run forward once, at the
dataset's channels, classes and input size, in the same child-process check that "Visualize"
uses (user code never runs in the server process); answers are cached (networks/cache.py).
"""

from __future__ import annotations

from pathlib import Path

from trainyard.core import jobfiles
from trainyard.core.errors import InvalidInput
from trainyard.core.files import read_json
from trainyard.jobs.context import Context
from trainyard.networks.cache import NetworkCache, network_cache
from trainyard.training.spec import ModelSpec, dataset_folder

DEFAULT_CLASSES = 10  # a dataset still building has no class list yet: any count checks shapes


def cache_for(ctx: Context) -> NetworkCache:
    return network_cache(ctx.settings.home / "cache" / "networks")


def dataset_geometry(ctx: Context, spec: ModelSpec) -> dict:
    """{classes, channels, height, width} of the model's dataset: its info.json once built, else
    what its job has reported so far, else its spec.json (classes are then unknown)."""
    dataset_id = spec.dataset_id or ""  # a checked spec has one (ModelSpec._check)
    try:
        info = read_json(Path(dataset_folder(spec)) / "info.json")
    except FileNotFoundError:
        job = ctx.store.get_job(dataset_id)
        info = job.summary if job is not None and (job.summary or {}).get("width") else {}
        if not info:
            try:
                info = jobfiles.read_json(ctx.manager.folder(dataset_id).path, "spec.json")
            except OSError:
                info = {}
    return {"classes": len(info.get("classes") or []) or None, "channels": int(info.get("channels") or 3),
            "height": int(info.get("height") or 256), "width": int(info.get("width") or 256)}


def input_size(spec: ModelSpec, geometry: dict) -> tuple[int, int]:
    """The (height, width) the network sees, as training computes it; InvalidInput if none works."""
    height, width = geometry["height"], geometry["width"]
    spec.input_side(height, width)
    return (spec.crop, spec.crop) if spec.crop else (height, width)


def check_model_spec(ctx: Context, spec: ModelSpec) -> None:
    """Raise InvalidInput naming the line or layer when the network cannot train on the dataset."""
    geometry = dataset_geometry(ctx, spec)
    height, width = input_size(spec, geometry)
    answer = cache_for(ctx).check(
        network=spec.network, source=None if spec.network else spec.network_source,
        num_classes=geometry["classes"] or DEFAULT_CLASSES, in_channels=geometry["channels"],
        image_size=min(height, width), input_size=(height, width), timeout=ctx.settings.check_timeout_s)
    if answer.get("ok") or answer.get("transient"):
        return  # a check that could not run says nothing about the network: training will tell
    what = f"network {spec.network}" if spec.network else "the custom network"
    shape = f"{geometry['channels']}x{height}x{width}"
    raise InvalidInput(f"{what} does not run on this dataset's {shape} input: {answer['error']}")


def check_all(ctx: Context, specs: list[ModelSpec]) -> None:
    """Check each distinct network x dataset of a sweep once (learning rates do not matter)."""
    seen = set()
    for spec in specs:
        key = (spec.dataset_id, spec.network, spec.network_source, spec.crop)
        if key not in seen:
            seen.add(key)
            check_model_spec(ctx, spec)
