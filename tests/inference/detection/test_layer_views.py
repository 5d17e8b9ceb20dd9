"""A standard detector's layer views: its backbone and neck, layer by layer, beside its boxes."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference.detection.answer import detect_answer
from trainyard.inference.detection.detector import LoadedDetector
from trainyard.networks.registry import create_network

SIZE = 64


def loaded(network: str) -> LoadedDetector:
    model = create_network(network, 2, 3, SIZE).eval()
    return LoadedDetector(Path("untrained.pt"), model, ["disc", "square"],
                          Preprocessing(width=SIZE, height=SIZE, channels=3, resize="pad"), 1, network)


def png(width: int, height: int) -> bytes:
    pixels = np.random.default_rng(0).integers(0, 255, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def test_the_fpn_detector_shows_its_backbone_then_its_neck():
    doc = detect_answer(loaded("fasterrcnn_mobilenet_v3_large_fpn"), [("a.png", png(96, 80)), ("b.png", png(64, 64))],
                        threshold=0.0, layers=True)
    first, second = doc["results"]
    assert "visualization" not in second  # the first image's views only
    layers = first["visualization"]["layers"]
    assert layers[0]["name"] == "input" and layers[0]["output_shape"] == [3, SIZE, SIZE]
    names = [layer["name"] for layer in layers[1:]]
    assert names[0] == "backbone.body.0.0" and all(n.startswith("backbone.") for n in names)
    assert any(n.startswith("backbone.fpn.") for n in names)  # the neck after the backbone
    assert names.index(next(n for n in names if n.startswith("backbone.fpn."))) > names.index("backbone.body.0.0")
    stem = layers[1]
    assert stem["type"] == "Conv2d" and stem["weight_image"] and stem["activation_image"]
    assert stem["weights"]["std"] > 0 and len(stem["activations"]["histogram"]["counts"]) == 20


def test_without_views_the_answer_is_the_plain_one():
    detector = loaded("ssdlite320_mobilenet_v3_large")
    with_views = detect_answer(detector, [("a.png", png(64, 64))], threshold=0.0, layers=True)["results"][0]
    plain = detect_answer(detector, [("a.png", png(64, 64))], threshold=0.0)["results"][0]
    assert with_views.pop("visualization")["layers"][1]["name"].startswith("backbone.features.")
    assert with_views == plain  # the hooks change no box


def test_statistics_of_a_nearly_constant_map_have_their_histogram():
    """A detector's layers give maps only a few float32 steps wide; numpy then found no 20 bins."""
    from trainyard.inference.visualize import tensor_stats

    one = np.float32(1)
    stats = tensor_stats(np.array([one, np.nextafter(one, np.float32(2))] * 8, np.float32))
    assert sum(stats["histogram"]["counts"]) == 16 and stats["std"] >= 0
