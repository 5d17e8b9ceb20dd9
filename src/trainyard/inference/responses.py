"""Classify named images for a request (API or CLI): predictions, and on demand the layer
views and the Grad-CAM map, as the JSON documents the API returns.

Result of one image: ``{"image": name, "predictions": [[label, confidence], ...]}`` best first,
plus ``visualization`` (``{"layers": [...]}``, see visualize.py) and ``saliency``
(``{"image": PNG data URI, "class": label, "layer": name}``) when asked for.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from PIL import Image

from trainyard.inference.classify import (
    MAX_TOP,
    prepare,
    probabilities,
    top_predictions,
)
from trainyard.inference.gradcam import Saliency, gradcam, overlay_png
from trainyard.inference.loader import InferenceError, LoadedModel
from trainyard.inference.visualize import visualize


def classify_named(loaded: LoadedModel, images: Sequence[tuple[str, Image.Image]], *, top: int = 5,
                   layers: bool = False, saliency: bool = False) -> list[dict]:
    """One result per ``(name, image)``, in order."""
    if not 1 <= top <= MAX_TOP:
        raise InferenceError(f"top must be between 1 and {MAX_TOP}, not {top}")
    if not layers and not saliency:
        prepared = prepare(loaded, [image for _, image in images])
        predictions = top_predictions(probabilities(loaded, prepared.inputs), loaded.classes, top)
        return [{"image": name, "predictions": p} for (name, _), p in zip(images, predictions)]
    return [_inspect(loaded, name, image, top, layers, saliency) for name, image in images]


def _inspect(loaded: LoadedModel, name: str, image: Image.Image, top: int, layers: bool, saliency: bool) -> dict:
    prepared = prepare(loaded, [image])
    if layers:
        inspection = visualize(loaded, prepared, saliency=saliency)
        probs, cam = inspection.probs, inspection.saliency
    else:
        probs, cam = probabilities(loaded, prepared.inputs), gradcam(loaded, prepared)
    result: dict[str, Any] = {"image": name, "predictions": top_predictions(probs, loaded.classes, top)[0]}
    if layers:
        result["visualization"] = {"layers": inspection.layers}
    if cam is not None:
        result["saliency"] = saliency_doc(cam, prepared.pixels[0], loaded.classes)
    return result


def saliency_doc(cam: Saliency, pixels, classes: list[str]) -> dict:
    png = overlay_png(cam.cam, pixels)
    return {"image": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
            "class": classes[cam.class_index], "layer": cam.layer}


def model_doc(loaded: LoadedModel) -> dict:
    """What a classify response says about the model that answered."""
    p = loaded.preprocess
    return {"epoch": loaded.epoch, "network": loaded.network, "classes": loaded.classes,
            "input": {"width": p["width"], "height": p["height"], "channels": p["channels"],
                      "resize": p["resize"], "crop": p.get("crop"), "mean": p.get("mean_mode")}}
