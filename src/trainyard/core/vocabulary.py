"""Names that several layers spell alike: the tasks, the mean and resize modes, and how a GPU is named
as a resource.

One source each, so the spec, the CLI, the form, the artefact and the scheduler cannot drift
apart. Plain strings and no imports beyond typing: every process may read this.
"""

from __future__ import annotations

from typing import Literal, get_args

# What a dataset, a network and a model are for. Spelled here once; what varies by task lives in
# the task registries (core/tasks.py and one per layer: docs/architecture.md, "Tasks").
Task = Literal["classification", "detection", "multilabel", "segmentation"]
TASKS: tuple[str, ...] = get_args(Task)
DEFAULT_TASK: Task = "classification"  # what a spec, a checkpoint or an older job without one means

# What a model subtracts from its input: the dataset's mean image, its mean pixel, or nothing.
MeanMode = Literal["image", "pixel", "none"]
MEAN_MODES: tuple[str, ...] = get_args(MeanMode)

# How a dataset build fits an image to its size (datasets/resize_plans.py holds each one's
# geometry); named here because the artefact checks an archive's mode without loading datasets.
ResizeMode = Literal["squash", "crop", "fill", "half_crop"]
RESIZE_MODES: tuple[str, ...] = get_args(ResizeMode)

# A whole GPU ("gpu:0") and a GPU shared by one inference job ("gpushare:0"), as leases name them.
GPU_PREFIX, SHARE_PREFIX = "gpu:", "gpushare:"


def gpu_resource(index: int | str) -> str:
    """The resource name of GPU ``index``: ``gpu:0`` (a cluster worker's GPU id may be a string)."""
    return f"{GPU_PREFIX}{index}"


def gpu_share(index: int) -> str:
    """The resource name of an inference job's share of GPU ``index``: ``gpushare:0``."""
    return f"{SHARE_PREFIX}{index}"


def gpu_index(resource: str, *, shares: bool = True) -> int | None:
    """The GPU index a resource name holds (``gpu:1`` -> 1; ``gpushare:1`` too unless not
    ``shares``), or None for any other resource (``cpu:0``, ``dataset:x``)."""
    prefixes = (GPU_PREFIX, SHARE_PREFIX) if shares else (GPU_PREFIX,)
    for prefix in prefixes:
        if resource.startswith(prefix) and resource[len(prefix):].isdigit():
            return int(resource[len(prefix):])
    return None


# The validation metric that ranks a model's epochs ("best"), by task: a classifier's top-1
# accuracy (percent), a detector's COCO mAP@0.5 (0..1), a multi-label classifier's micro F1
# (0..1), a segmenter's mean IoU over the classes (0..1). Higher is better for all.
BEST_METRIC = {"classification": "val_accuracy", "detection": "val_map50", "multilabel": "val_micro_f1",
               "segmentation": "val_miou"}


def best_score(best: dict | None) -> float | None:
    """The score of a ``best`` entry ({epoch, val_accuracy} or {epoch, val_map50}), or None."""
    for name in BEST_METRIC.values():
        if best and best.get(name) is not None:
            return float(best[name])
    return None

# The variable a job's process finds set when the runner gave it real GPUs (its value: their
# lease indices); unset for a CPU job and for fake GPUs (TRAINYARD_FAKE_GPUS). A job that finds
# it set and CUDA unusable fails at once rather than train on the CPU while holding the GPUs.
LEASED_GPUS = "TRAINYARD_LEASED_GPUS"

# The most channels an image of a dataset or model may have (N-channel TIFF, datasets/deep.py).
MAX_CHANNELS = 16
