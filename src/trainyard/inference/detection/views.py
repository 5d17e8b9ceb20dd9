"""A detector's layer views: its backbone and neck, layer by layer, as classify shows a classifier.

The layers of ``model.backbone`` (torchvision's detectors keep the feature extractor there: for
the FPN models ``backbone.body`` is the backbone and ``backbone.fpn`` the neck; SSDlite's
``backbone`` holds its features and extra layers) are recorded by classification's own
`LayerRecorder` (inference/visualize.py) while the detector finds the boxes of the first image:
weights and activations as mosaics, with mean, std and a histogram each. A detector without a
``backbone`` (a custom one may name it otherwise) shows every layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from trainyard.artifact.inputs import Prepared
from trainyard.inference.visualize import LayerRecorder, input_layer

T = TypeVar("T")


def feature_extractor(model: nn.Module) -> str:
    """The name of the module whose layers are shown: ``backbone`` where there is one, else ""."""
    return "backbone" if isinstance(getattr(model, "backbone", None), nn.Module) else ""


def with_layer_views(model: nn.Module, pixels: np.ndarray, detect: Callable[[], T]) -> tuple[T, list[dict]]:
    """(``detect()``'s answer, the layer table) for a ``detect`` that runs ``model`` on the one
    stored-size image ``pixels`` (H, W, C uint8): the input first, then each backbone layer."""
    inputs = torch.from_numpy(np.array(pixels)).permute(2, 0, 1).float().div_(255)
    if inputs.shape[0] == 1:
        inputs = inputs.expand(3, -1, -1)  # what the detector receives (detector.py)
    row = input_layer(Prepared(inputs=inputs[None].numpy(), stored=pixels[None]))
    with LayerRecorder(model, rgb=True, under=feature_extractor(model)) as recorder:
        answer = detect()
    return answer, [row, *recorder.layers]
