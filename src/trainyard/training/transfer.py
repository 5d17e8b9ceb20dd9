"""Making transferred weights work on new inputs: what the network is fed, BatchNorm statistics
and frozen BatchNorm.

Weights whose input normalisation is known (a store entry's, or the one a trainyard checkpoint
recorded) are fed exactly that (`input_normalisation`): their mean and std, recorded in the
run's checkpoint so validation, classify, evaluate and the archive scripts do the same.

A BatchNorm layer normalises with its running mean and variance in eval mode (validation,
classify, export). Weights whose input normalisation is unknown were trained on other inputs, so
those statistics misnormalise every layer until training replaces them (slowly with a low
backbone LR, never with a frozen backbone): validation sits at chance while the training loss
falls. `recalibrate_batchnorm` recomputes them on the new training data before the first epoch
(one pass without gradients, a cumulative average: momentum None), which is what the weights'
own training would have recorded had it seen these inputs.

The running averages (momentum 0.1) also lag a fine-tune's weights: a small dataset gives few
steps an epoch while the pretrained weights move fast, so after an epoch the averages are still
largely those of the starting weights and validation in eval mode can drop to chance while the
same weights do well in training mode (a hand-written torchvision loop shows it too). So a
fine-tune recomputes the statistics of its trainable BatchNorm layers before every validation and
checkpoint (`refresh_batchnorm`, "precise BN"): what is validated, saved, classified and
exported normalises with the statistics of its own weights. The pass is a pure function of the
weights and the stored training images, so a resumed run makes the same one.

A frozen layer must stay what it was: `keep_frozen_batchnorm_in_eval` keeps BatchNorm layers
without trainable parameters in eval mode while the rest trains, so they normalise with their
(kept or recalibrated) running statistics in training exactly as in validation, and training
does not move statistics that nothing else in the layer follows.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from torch import nn

from trainyard.artifact.preprocessing import Preprocessing
from trainyard.artifact.recorded import RecordedInput
from trainyard.core.events import EventWriter
from trainyard.datasets.info import DatasetInfo
from trainyard.training.data import BatchLoader
from trainyard.training.spec import ModelSpec
from trainyard.weights import finetune, normalisation

MIN_STD = 1e-4  # a flat channel (std 0) is divided by this instead: no infinities
MAX_RECALIBRATION_IMAGES = 4096  # enough for stable statistics; a big dataset's first epoch is not rerun


def batchnorm_layers(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats]


@torch.no_grad()
def recalibrate_batchnorm(model: nn.Module, loader: BatchLoader, max_images: int = MAX_RECALIBRATION_IMAGES,
                          layers: list[nn.modules.batchnorm._BatchNorm] | None = None) -> int:
    """Recompute the running statistics of ``layers`` (every BatchNorm layer by default) on
    ``loader``'s images (no augmentation); return the number of images used. Only BatchNorm runs
    in train mode, so dropout draws no random numbers and nothing else changes."""
    layers = batchnorm_layers(model) if layers is None else layers
    if not layers:
        return 0
    was_training = model.training
    model.eval()
    momenta = [m.momentum for m in layers]
    for m in layers:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the pass, not an exponential one
        m.train()
    seen = 0
    try:
        for images, _ in _limited(loader, max_images):
            model(images)
            seen += len(images)
    finally:
        for m, momentum in zip(layers, momenta):
            m.momentum = momentum
        model.train(was_training)
    return seen


def _pass_batches(loader: BatchLoader, max_images: int) -> int:
    """The batches a recalibration pass reads: enough for ``max_images``, at least one."""
    return max(1, -(-max_images // loader.batch_size))


def _limited(loader: BatchLoader, max_images: int) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    return loader.batches(0, 0, _pass_batches(loader, max_images))


def _frozen(layer: nn.Module) -> bool:
    """A BatchNorm layer with parameters, none of which trains (a layer without any trains its statistics)."""
    params = list(layer.parameters())
    return bool(params) and not any(p.requires_grad for p in params)


def trainable_batchnorm(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    """The BatchNorm layers that train: a frozen one keeps its statistics (and stays in eval
    mode, so recomputing would leave it reset)."""
    return [m for m in batchnorm_layers(model) if not _frozen(m)]


def refresh_batchnorm(net: nn.Module, loader: BatchLoader | None) -> None:
    """Before a validation or checkpoint of a fine-tune: its trainable BatchNorm layers'
    statistics for its current weights (``loader``: the training images, None for no pass)."""
    if loader is not None:
        recalibrate_batchnorm(net, loader, layers=trainable_batchnorm(net))


def _stay_in_eval(module: nn.Module, _inputs) -> None:
    module.training = False  # model.train() sets it again each epoch; a frozen layer ignores that


def keep_frozen_batchnorm_in_eval(model: nn.Module) -> int:
    """Keep every BatchNorm layer whose parameters are all frozen in eval mode; return how many."""
    frozen = [m for m in batchnorm_layers(model) if _frozen(m)]
    for m in frozen:
        m.register_forward_pre_hook(_stay_in_eval)
    return len(frozen)


def input_normalisation(spec: ModelSpec, ckpt: dict | None, dataset_mean: np.ndarray | None,
                         shape: tuple[int, int, int], events: EventWriter
                         ) -> tuple[np.ndarray | None, str, list[float] | None]:
    """(mean image (H, W, C) in 0..255 or None, mean mode, std or None) the network is fed.

    Pretrained weights whose normalisation is known (the store entry's, or a trainyard
    checkpoint's own) get exactly it: their mean as a constant image ("pixel") and their std.
    Otherwise the dataset's mean, as the spec says. A resumed run takes its checkpoint's.
    """
    prep = Preprocessing.of_checkpoint(ckpt) if ckpt else None
    if prep and prep.std:  # normalised as its starting weights (or its dataset) expected: keep it
        return np.asarray(prep.mean, np.float32), prep.mean_mode, list(prep.std)
    norm = None if ckpt else pretrained_normalisation(spec)
    if norm is None:
        if dataset_mean is None and spec.mean != "none":
            events.log(f"the dataset has no mean.npy: mean {spec.mean!r} falls back to none", "warning")
        return dataset_mean, spec.mean if dataset_mean is not None else "none", None
    height, width, channels = shape
    means, std = finetune.channel_normalisation(norm[0], norm[1], channels)
    image = np.empty((height, width, channels), np.float32)
    image[:] = np.asarray(means, np.float32) * np.float32(255.0)
    events.log(f"input normalised as the pretrained weights expect: mean {[round(v, 4) for v in means]}, std {std}")
    return image, "pixel", std


def dataset_std(info: DatasetInfo, events: EventWriter) -> list[float] | None:
    """A 16-bit or N-channel dataset's per-channel std (0..1 units), which its input is divided by
    after the mean: its values may fill a small part of the full scale (a 12-bit camera, a sensor
    band), and the network should see them at unit spread. None for 8-bit RGB or grey datasets."""
    if not info.channel_std:
        return None
    std = [max(float(s), MIN_STD) for s in info.channel_std]
    events.log(f"input divided by the dataset's per-channel std {[round(s, 5) for s in std]}")
    return std


def pretrained_normalisation(spec: ModelSpec) -> normalisation.Normalisation | None:
    """The store entry's normalisation, or the one a trainyard checkpoint recorded."""
    if spec.input_norm is not None:
        return spec.input_norm.mean, spec.input_norm.std
    if not spec.pretrained or spec.pretrained_entry:
        return None
    return RecordedInput.of_file(spec.pretrained).normalisation  # not a checkpoint: _load_pretrained says so


def recalibrate(net: nn.Module, loader: BatchLoader, events: EventWriter, known: bool) -> None:
    """Pretrained weights' BatchNorm statistics were made on other images (and, when their
    normalisation is unknown, on other inputs): recompute them on this training set."""
    images = recalibrate_batchnorm(net, loader)
    if not images:
        return
    why = ("" if known else "; the weights' input normalisation is unknown (import them with --mean/--std "
           "to feed them what they were trained on)")
    events.log(f"pretrained: BatchNorm running statistics recomputed on {images} training images before "
               f"the first epoch{why}")


def refresh_loader(net: nn.Module, loader: BatchLoader, events: EventWriter) -> BatchLoader | None:
    """``loader`` when a fine-tune has trainable BatchNorm layers to refresh (`refresh_batchnorm`)."""
    layers = trainable_batchnorm(net)
    if not layers:
        return None
    images = min(loader.images_per_epoch, _pass_batches(loader, MAX_RECALIBRATION_IMAGES) * loader.batch_size)
    events.log(f"pretrained: the running statistics of {len(layers)} BatchNorm layers are recomputed on "
               f"{images} training images before every validation and checkpoint (the weights move faster "
               "than the running averages follow)")
    return loader
