"""Look inside a network: each layer's activations and weights as mosaics, with statistics.

One forward pass of one image with a hook on every leaf module, in the order the layers run.
Each hook summarises its layer at once (an in-place ReLU would otherwise overwrite what a
convolution or batch norm produced): type, output shape, parameter count, and for the
activations and for the weights: mean, standard deviation, min, max and a 20-bin histogram
(numpy's ``np.histogram`` over the finite values). Convolutions get a mosaic of their filters and
every spatial output a mosaic of its feature maps, as PNG data URIs; fully-connected layers
get statistics only. Mosaics follow DIGITS's ``vis_square``: one grey scale for the whole layer,
tiles one pixel apart, at most `MAX_TILES` tiles and `MAX_SIDE` pixels a side.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from trainyard.artifact.inputs import Prepared
from trainyard.datasets.images import png_bytes
from trainyard.inference.gradcam import Saliency, saliency_from, target_layer
from trainyard.inference.loader import InferenceError, LoadedModel
from trainyard.inference.torch_forward import logits_of, to_device

BINS = 20
MAX_TILES = 64  # feature maps (or filters) drawn per layer
MAX_SIDE = 256  # pixels: longer mosaics are drawn from average-pooled maps
MAX_MATRIX = 256  # rows and columns of a 1x1 convolution's weight matrix drawn
PNG_LEVEL = 1  # zlib level: mosaics are encoded for one page view, speed matters more than size


def tensor_stats(values: np.ndarray | torch.Tensor) -> dict:
    """Mean, std (population, as numpy's default), min, max and a 20-bin histogram."""
    if isinstance(values, torch.Tensor):
        values = values.detach().float().cpu().numpy()
    flat = np.asarray(values, dtype=np.float32).ravel()
    finite = flat[np.isfinite(flat)] if not np.isfinite(flat).all() else flat
    if finite.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "count": int(flat.size),
                "histogram": {"counts": [], "edges": []}}
    # float64 edges: a float32 range only a few ulps wide (a nearly constant map) has no 20 bins
    counts, edges = np.histogram(finite.astype(np.float64), bins=BINS)
    return {"mean": float(finite.mean(dtype=np.float64)), "std": float(finite.std(dtype=np.float64)),
            "min": float(finite.min()), "max": float(finite.max()), "count": int(flat.size),
            "histogram": {"counts": counts.tolist(), "edges": edges.tolist()}}


def png_data_uri(pixels: np.ndarray) -> str:
    """An (H, W) or (H, W, 3) uint8 array as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(pixels, PNG_LEVEL)).decode("ascii")


def to_uint8(values: np.ndarray) -> np.ndarray:
    """Scale to 0..255 with one range for the whole array (constant arrays become mid grey)."""
    values = np.nan_to_num(values.astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    lo, hi = float(values.min()), float(values.max())
    if hi <= lo:
        return np.full(values.shape, 128, np.uint8)
    return ((values - lo) * (255.0 / (hi - lo))).round().astype(np.uint8)


def tile(tiles: np.ndarray, columns: int | None = None, background: int = 255) -> np.ndarray:
    """(K, h, w[, 3]) uint8 tiles -> one mosaic, tiles one pixel apart, row by row."""
    k, h, w = tiles.shape[:3]
    cols = columns or math.ceil(math.sqrt(k))
    rows = math.ceil(k / cols)
    shape = (rows * (h + 1) - 1, cols * (w + 1) - 1) + tiles.shape[3:]
    out = np.full(shape, background, np.uint8)
    for i in range(k):
        r, c = divmod(i, cols)
        out[r * (h + 1): r * (h + 1) + h, c * (w + 1): c * (w + 1) + w] = tiles[i]
    return out


def feature_mosaic(maps: torch.Tensor) -> tuple[str, int]:
    """(C, H, W) feature maps -> (PNG data URI of the first MAX_TILES, how many are drawn)."""
    maps = maps[:MAX_TILES].float()
    k, h, w = maps.shape
    cols = math.ceil(math.sqrt(k))
    factor = math.ceil(cols * (max(h, w) + 1) / MAX_SIDE)
    if factor > 1:
        maps = F.avg_pool2d(maps[None], factor, ceil_mode=True)[0]
    return png_data_uri(tile(to_uint8(maps.cpu().numpy()), cols)), k


def weight_mosaic(weight: torch.Tensor, rgb: bool) -> str | None:
    """A convolution's (out, in, kh, kw) weights as a mosaic.

    RGB filters (a first layer on colour images) are drawn in colour, one tile per filter, and
    one-channel filters (a first layer on grayscale images) one grey tile each, both in a
    near-square grid; 1x1 convolutions as their (out, in) weight matrix; others as a grid of
    kernels with a row per output filter and a column per input channel (at most 8 x 8).
    """
    w = weight.detach().float().cpu()
    if w.ndim != 4:
        return None
    out_ch, in_ch, kh, kw = w.shape
    if kh == kw == 1:
        return png_data_uri(to_uint8(w[:MAX_MATRIX, :MAX_MATRIX, 0, 0].numpy()))
    if rgb and in_ch == 3:
        return png_data_uri(tile(to_uint8(w[:MAX_TILES].permute(0, 2, 3, 1).numpy())))
    if in_ch == 1:  # a column of 8 would be a thin strip: every filter, square, like the maps
        return png_data_uri(tile(to_uint8(w[:MAX_TILES, 0].numpy())))
    rows, cols = min(out_ch, 8), min(in_ch, 8)
    kernels = w[:rows, :cols].reshape(rows * cols, kh, kw).numpy()
    return png_data_uri(tile(to_uint8(kernels), cols))


def describe_layer(name: str, module: nn.Module, output: object, rgb_input: bool) -> dict:
    """Everything the layer table shows for one layer, from its output right after it ran."""
    tensor = output[0] if isinstance(output, (tuple, list)) else output
    weight = getattr(module, "weight", None)
    weight = weight if isinstance(weight, torch.Tensor) else None
    layer = {"name": name, "type": type(module).__name__,
             "output_shape": list(tensor.shape[1:]) if isinstance(tensor, torch.Tensor) else None,
             "params": sum(p.numel() for p in module.parameters(recurse=False)),
             "activations": None, "weights": tensor_stats(weight) if weight is not None else None,
             "activation_image": None, "maps_shown": 0, "weight_image": None}
    if isinstance(tensor, torch.Tensor):
        first = tensor[0].detach()
        layer["activations"] = tensor_stats(first)
        if first.ndim == 3 and first.shape[1] * first.shape[2] > 1:
            layer["activation_image"], layer["maps_shown"] = feature_mosaic(first)
    if isinstance(module, nn.Conv2d) and weight is not None:
        layer["weight_image"] = weight_mosaic(weight, rgb_input and module.in_channels == 3)
    return layer


def input_layer(prepared: Prepared) -> dict:
    """The first row of the table: the image as the network receives it."""
    pixels = prepared.pixels[0]
    shown = pixels[:, :, 0] if pixels.shape[2] == 1 else pixels
    return {"name": "input", "type": "Input", "output_shape": list(prepared.inputs.shape[1:]),
            "params": 0, "activations": tensor_stats(prepared.inputs[0]), "weights": None,
            "activation_image": png_data_uri(shown), "maps_shown": pixels.shape[2], "weight_image": None}


def _saliency_layer(loaded: LoadedModel, x: torch.Tensor) -> str | None:
    """Grad-CAM's layer, or None for a network without a spatial layer (no map, no error)."""
    try:
        return target_layer(loaded, x)
    except InferenceError:
        return None


@dataclass
class Inspection:
    """What one visualised pass gives: the layer table, class probabilities, a saliency map."""

    layers: list[dict]
    probs: np.ndarray  # (1, classes) float32
    saliency: Saliency | None


class LayerRecorder:
    """``with LayerRecorder(model, rgb) as rec: model(x)``: then ``rec.layers`` describes each leaf
    module (those under ``under``, a module name, when given) in the order it ran, from the first
    image of the batch (describe_layer). A module run twice is listed twice. Classify's views use
    it on the whole network, a detector's on its backbone and neck (detection/views.py)."""

    def __init__(self, model: nn.Module, rgb: bool, under: str = ""):
        prefix = f"{under}." if under else ""
        self.leaves = [(n, m) for n, m in model.named_modules()
                       if n.startswith(prefix) and next(m.children(), None) is None]
        self.rgb = rgb
        self.layers: list[dict] = []
        self._seen: dict[str, int] = {}
        self._handles: list = []

    def _hook(self, name: str) -> Callable[[nn.Module, tuple, object], None]:
        def record(module: nn.Module, args: tuple, output: object) -> None:
            self._seen[name] = self._seen.get(name, 0) + 1
            label = name if self._seen[name] == 1 else f"{name} (call {self._seen[name]})"
            with torch.no_grad():
                self.layers.append(describe_layer(label, module, output, self.rgb))
        return record

    def __enter__(self) -> LayerRecorder:
        self._handles = [m.register_forward_hook(self._hook(n)) for n, m in self.leaves]
        return self

    def __exit__(self, *exc_info: object) -> None:
        for handle in self._handles:
            handle.remove()


def visualize(loaded: LoadedModel, prepared: Prepared, saliency: bool = False) -> Inspection:
    """The layer table of the first image of ``prepared`` and, with ``saliency``, its Grad-CAM.

    Both come from one forward pass (with gradients only when the saliency map is wanted).
    """
    x = to_device(prepared.inputs[:1], loaded.device)
    with loaded.lock:
        target = _saliency_layer(loaded, x) if saliency else None
        captured: list[torch.Tensor] = []
        handle = None
        if target:
            module = loaded.model.get_submodule(target)
            handle = module.register_forward_hook(lambda m, a, out: captured.append(out))
        try:
            with LayerRecorder(loaded.model, loaded.preprocess.channels == 3) as recorder, \
                    torch.inference_mode(not saliency), torch.set_grad_enabled(saliency):
                logits = logits_of(loaded.model(x))
                cam = saliency_from(logits, captured[-1], x.shape[2:], target) if target else None
        finally:
            if handle is not None:
                handle.remove()
    layers = [input_layer(prepared), *recorder.layers]
    return Inspection(layers, torch.softmax(logits.detach().float(), dim=1).cpu().numpy(), cam)
