"""Grad-CAM (Selvaraju et al. 2017): where in the image the evidence for a class lies.

The target layer is the last layer whose output still has a spatial layout (more than one
position): its feature maps are weighted by the class score's gradient averaged over each map,
summed, passed through ReLU, scaled to 0..1 and resized to the input. The layer is found once
per loaded model, by one forward pass that notes which module produced a 4-D output last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from trainyard.artifact.inputs import Prepared
from trainyard.datasets.images import png_bytes
from trainyard.inference.loader import InferenceError, LoadedModel
from trainyard.inference.torch_forward import logits_of, to_device

BLEND = 0.45  # weight of the heat map over the image


def target_layer(loaded: LoadedModel, inputs: torch.Tensor) -> str:
    """Name of the module whose spatial output comes last in the forward pass (cached).

    Call with ``loaded.lock`` held: the search hooks the shared modules.
    """
    if loaded.gradcam_layer is not None:
        return loaded.gradcam_layer
    last: list[str] = []

    def note(name: str) -> Callable[[torch.nn.Module, tuple, object], None]:
        def hook(module: torch.nn.Module, args: tuple, output: object) -> None:
            if isinstance(output, torch.Tensor) and output.ndim == 4 and output.shape[2] * output.shape[3] > 1:
                last.append(name)
        return hook

    modules = [(n, m) for n, m in loaded.model.named_modules() if n]
    handles = [m.register_forward_hook(note(n)) for n, m in modules]
    try:
        with torch.inference_mode():
            loaded.model(inputs[:1])
    finally:
        for handle in handles:
            handle.remove()
    if not last:
        raise InferenceError("Grad-CAM needs a layer with a spatial output; this network has none")
    loaded.gradcam_layer = last[-1]
    return last[-1]


def gradcam(loaded: LoadedModel, prepared: Prepared, class_index: int | None = None) -> Saliency:
    """Grad-CAM for the first image of ``prepared``; ``class_index`` None explains the top class."""
    x = to_device(prepared.inputs[:1], loaded.device)
    with loaded.lock:
        name = target_layer(loaded, x)
        captured: list[torch.Tensor] = []
        handle = loaded.model.get_submodule(name).register_forward_hook(lambda m, a, out: captured.append(out))
        try:
            with torch.enable_grad():
                logits = logits_of(loaded.model(x))
                return saliency_from(logits, captured[-1], x.shape[2:], name, class_index)
        finally:
            handle.remove()


@dataclass
class Saliency:
    """A Grad-CAM result: the heat map (h, w) in 0..1, the class it explains, the layer used."""

    cam: np.ndarray
    class_index: int
    layer: str


def saliency_from(logits: torch.Tensor, activations: torch.Tensor, size: Sequence[int], layer: str,
                  class_index: int | None = None) -> Saliency:
    """Grad-CAM from a grad-enabled pass: ``activations`` (1, C, H, W) of ``layer`` led to ``logits``."""
    index = int(logits[0].argmax()) if class_index is None else class_index
    (grads,) = torch.autograd.grad(logits[0, index], activations)
    weights = grads[0].mean(dim=(1, 2), keepdim=True)  # (C, 1, 1): each map's importance
    cam = torch.relu((weights * activations[0].detach()).sum(dim=0))[None, None]
    cam = F.interpolate(cam.float(), size=tuple(size), mode="bilinear", align_corners=False)[0, 0]
    peak = float(cam.max())
    cam = cam / peak if peak > 0 else cam
    return Saliency(cam.cpu().numpy(), index, layer)


def colormap(values: np.ndarray) -> np.ndarray:
    """0..1 values -> (H, W, 3) uint8, blue (0) through green and yellow to red (1)."""
    v = np.clip(values, 0.0, 1.0)[..., None]
    stops = np.array([[0, 0, 143], [0, 120, 255], [40, 220, 120], [255, 220, 0], [220, 0, 0]], np.float32)
    position = v[..., 0] * (len(stops) - 1)
    low = np.floor(position).astype(int).clip(0, len(stops) - 2)
    frac = (position - low)[..., None]
    return (stops[low] * (1 - frac) + stops[low + 1] * frac).astype(np.uint8)


def overlay_png(cam: np.ndarray, pixels: np.ndarray) -> bytes:
    """The heat map blended over the (h, w, C) uint8 input image, as PNG bytes."""
    image = np.repeat(pixels, 3, axis=2) if pixels.shape[2] == 1 else pixels
    blended = image.astype(np.float32) * (1 - BLEND) + colormap(cam).astype(np.float32) * BLEND
    return png_bytes(blended.round().astype(np.uint8))
