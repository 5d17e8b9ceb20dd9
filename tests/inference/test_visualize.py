"""The layer views: statistics equal numpy's on the same activations, mosaics, Grad-CAM."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from tests.inference.checkpoints import MLP_SOURCE, write_checkpoint
from tests.trained_model import CROP, colour_image
from trainyard.inference.classify import prepare, probabilities
from trainyard.inference.gradcam import colormap, gradcam, overlay_png
from trainyard.inference.loader import load_model, model_checkpoint
from trainyard.inference.visualize import BINS, tensor_stats, tile, visualize, weight_mosaic


@pytest.fixture(scope="module")
def loaded(trained):
    return load_model(model_checkpoint(trained.ctx.manager.folder(trained.model_id).path)[1])


def png(uri: str) -> Image.Image:
    assert uri.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))


def reference_activations(model: nn.Module, x: torch.Tensor) -> dict[str, np.ndarray]:
    """Every leaf's output of a plain forward pass, copied at once (before in-place ops)."""
    seen = {}

    def keep(name):
        def hook(module, args, output):
            seen[name] = output[0].detach().clone().numpy()  # returns None: the output stays
        return hook

    hooks = [m.register_forward_hook(keep(n)) for n, m in model.named_modules() if n and not list(m.children())]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return seen


def numpy_stats(values: np.ndarray) -> dict:
    # in float64, as the statistics are taken: float32 edges of a nearly constant map can collapse
    counts, edges = np.histogram(values.astype(np.float64), bins=20)
    return {"mean": values.mean(dtype=np.float64), "std": values.std(dtype=np.float64),
            "counts": counts.tolist(), "edges": edges.tolist()}


def test_statistics_match_numpy_on_the_same_activations(loaded):
    prepared = prepare(loaded, [colour_image("red", 7)])
    inspection = visualize(loaded, prepared)
    reference = reference_activations(loaded.model, torch.from_numpy(prepared.inputs))
    layers = {layer["name"]: layer for layer in inspection.layers}
    assert list(layers)[1:] == list(reference)  # network order, every leaf
    for name, values in reference.items():
        got, want = layers[name]["activations"], numpy_stats(values)
        assert got["mean"] == pytest.approx(want["mean"], rel=1e-6, abs=1e-9)
        assert got["std"] == pytest.approx(want["std"], rel=1e-6, abs=1e-9)
        assert got["histogram"]["counts"] == want["counts"] and len(got["histogram"]["counts"]) == BINS
        assert got["histogram"]["edges"] == pytest.approx(want["edges"])
        assert list(layers[name]["output_shape"]) == list(values.shape)
    conv = loaded.model.get_submodule("features.0")
    want = numpy_stats(conv.weight.detach().numpy())
    assert layers["features.0"]["weights"]["mean"] == pytest.approx(want["mean"], rel=1e-6)
    assert layers["features.0"]["weights"]["histogram"]["counts"] == want["counts"]
    assert np.allclose(inspection.probs, probabilities(loaded, prepared.inputs), atol=1e-6)


def test_layer_table_mosaics_and_params(loaded):
    inspection = visualize(loaded, prepare(loaded, [colour_image("light", 1)]))
    layers = {layer["name"]: layer for layer in inspection.layers}
    first = inspection.layers[0]
    assert first["type"] == "Input" and first["output_shape"] == [3, CROP, CROP]
    assert png(first["activation_image"]).size == (CROP, CROP)
    conv1 = layers["features.0"]
    assert conv1["type"] == "Conv2d" and conv1["params"] == 20 * 3 * 5 * 5 + 20
    # 20 RGB 5x5 filters: 5 columns x 4 rows of tiles one pixel apart.
    assert png(conv1["weight_image"]).size == (5 * 6 - 1, 4 * 6 - 1) and png(conv1["weight_image"]).mode == "RGB"
    # 20 feature maps of (CROP - 4) x (CROP - 4): 5 x 4 tiles.
    side = CROP - 4 + 1
    assert png(conv1["activation_image"]).size == (5 * side - 1, 4 * side - 1) and conv1["maps_shown"] == 20
    conv2 = layers["features.2"]  # 50 x 20 kernels: an 8 x 8 grid of the first ones
    assert png(conv2["weight_image"]).size == (8 * 6 - 1, 8 * 6 - 1)
    fc = layers["classifier.1"]
    assert fc["type"] == "Linear" and fc["params"] == 800 * 500 + 500
    assert fc["activation_image"] is None and fc["weight_image"] is None  # statistics only
    assert fc["weights"]["histogram"]["counts"] and fc["activations"]["std"] > 0
    assert sum(layer["params"] for layer in inspection.layers) == sum(p.numel() for p in loaded.model.parameters())


def test_statistics_of_constant_and_non_finite_values():
    stats = tensor_stats(np.array([1.0, np.nan, 1.0, np.inf], np.float32))
    assert stats["mean"] == 1.0 and stats["std"] == 0.0 and stats["count"] == 4
    assert sum(stats["histogram"]["counts"]) == 2
    assert tensor_stats(np.array([np.nan], np.float32))["mean"] is None


def test_one_channel_filters_make_a_near_square_grid_not_a_strip():
    image = png(weight_mosaic(torch.randn(20, 1, 5, 5), rgb=False))  # LeNet's first layer, grayscale
    assert image.size == (5 * 6 - 1, 4 * 6 - 1)  # all 20 filters: 5 columns, 4 rows


def test_tile_layout():
    tiles = np.arange(5 * 2 * 3, dtype=np.uint8).reshape(5, 2, 3)
    mosaic = tile(tiles)  # 3 columns, 2 rows
    assert mosaic.shape == (2 * 3 - 1, 3 * 4 - 1)
    assert (mosaic[0:2, 4:7] == tiles[1]).all() and (mosaic[3:5, 0:3] == tiles[3]).all()
    assert (mosaic[2] == 255).all()  # the gap between rows


def test_gradcam_explains_the_top_class(loaded):
    prepared = prepare(loaded, [colour_image("dark", 3)])
    cam = gradcam(loaded, prepared)
    assert cam.cam.shape == (CROP, CROP) and cam.cam.min() >= 0 and cam.cam.max() <= 1
    assert loaded.classes[cam.class_index] == "dark"
    combined = visualize(loaded, prepared, saliency=True).saliency  # one pass for both
    assert combined.layer == cam.layer and np.allclose(combined.cam, cam.cam, atol=1e-5)
    overlay = Image.open(io.BytesIO(overlay_png(cam.cam, prepared.pixels[0])))
    assert overlay.size == (CROP, CROP) and overlay.mode == "RGB"
    assert colormap(np.array([0.0, 1.0])).tolist() == [[0, 0, 143], [220, 0, 0]]


def test_a_custom_grayscale_mlp_has_statistics_but_no_saliency(tmp_path):
    path = write_checkpoint(tmp_path / "mlp.pt", network=None, source=MLP_SOURCE, channels=1, stored=12, crop=None)
    loaded = load_model(path)
    inspection = visualize(loaded, prepare(loaded, [colour_image("red", 0)]), saliency=True)
    assert inspection.saliency is None  # no layer keeps a spatial layout: no Grad-CAM, no error
    assert [layer["type"] for layer in inspection.layers] == ["Input", "Flatten", "Linear", "Tanh", "Linear"]
    assert png(inspection.layers[0]["activation_image"]).mode == "L"
    assert all(layer["activations"]["histogram"]["counts"] for layer in inspection.layers)


def test_googlenet_visualization_covers_every_layer_with_grad_cam(tmp_path):
    """The whole GoogLeNet at 224x224 on the CPU: a layer table with mosaics and Grad-CAM.
    How long it takes is measured by bench/, not asserted here (shared machines are noisy)."""
    loaded = load_model(write_checkpoint(tmp_path / "g.pt", network="googlenet", stored=256, crop=224))
    prepared = prepare(loaded, [colour_image("red", 0, size=(300, 240))])
    inspection = visualize(loaded, prepared, saliency=True)
    assert inspection.saliency.layer == "inception5b"
    assert len(inspection.layers) > 150
