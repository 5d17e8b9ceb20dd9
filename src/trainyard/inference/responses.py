"""Classify named images for a request (API or CLI): predictions, and on demand the layer
views and the Grad-CAM map, as the JSON documents the API returns.

Result of one image: ``{"image": name, "predictions": [[label, confidence], ...]}`` best first,
plus ``visualization`` (``{"layers": [...]}``, see visualize.py) and ``saliency``
(``{"image": PNG data URI, "class": label, "layer": name}``) when asked for.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from trainyard.artifact.inputs import resize_for_input
from trainyard.datasets.images import ImageError, to_pil
from trainyard.inference.classify import (
    MAX_TOP,
    decode,
    load_for,
    over_thresholds,
    prepare,
    probabilities,
    top_predictions,
)
from trainyard.inference.loader import InferenceError, LoadedModel

if TYPE_CHECKING:
    from trainyard.inference.gradcam import Saliency


def classify_named(loaded: LoadedModel, images: Sequence[tuple[str, Image.Image | np.ndarray]], *,
                   top: int = 5, layers: bool = False, saliency: bool = False) -> list[dict]:
    """One result per ``(name, image)``, in order."""
    if not 1 <= top <= MAX_TOP:
        raise InferenceError(f"top must be between 1 and {MAX_TOP}, not {top}")
    if not layers and not saliency:
        prepared = prepare(loaded, [image for _, image in images])
        probs = probabilities(loaded, prepared.inputs)
        predictions = top_predictions(probs, loaded.classes, top)
        results: list[dict[str, Any]] = [{"image": name, "predictions": p} for (name, _), p in zip(images, predictions)]
        if loaded.thresholds is not None:  # a multi-label model: every label over its threshold
            for result, labels in zip(results, over_thresholds(probs, loaded.classes, loaded.thresholds)):
                result["labels"] = labels
        return results
    return [_inspect(loaded, name, image, top, layers, saliency) for name, image in images]


def _inspect(loaded: LoadedModel, name: str, image: Image.Image | np.ndarray, top: int, layers: bool,
             saliency: bool) -> dict:
    # The views hook PyTorch modules: torch is imported for them alone, not for predictions.
    from trainyard.inference.gradcam import gradcam
    from trainyard.inference.visualize import visualize

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


def saliency_doc(cam: Saliency, pixels: np.ndarray, classes: list[str]) -> dict:
    from trainyard.inference.gradcam import overlay_png

    png = overlay_png(cam.cam, pixels)
    return {"image": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
            "class": classes[cam.class_index], "layer": cam.layer}


def model_doc(loaded: LoadedModel) -> dict:
    """What a classify response says about the model that answered."""
    p = loaded.preprocess
    return {"epoch": loaded.epoch, "network": loaded.network, "classes": loaded.classes,
            "input": {"width": p.width, "height": p.height, "channels": p.channels,
                      "resize": p.resize, "crop": p.crop, "mean": p.mean_mode}}


def answer(loaded: LoadedModel, sources: Sequence[tuple[str, bytes | Path]], *, top: int = 5,
           layers: bool = False, saliency: bool = False) -> dict:
    """A classify response for (name, uploaded bytes or a checked path) images: model and results.

    The same in the server (standard networks) and in a model worker (custom ones).
    """
    images = [(name, _pil(loaded, name, source)) for name, source in sources]
    return {**model_doc(loaded), "results": classify_named(loaded, images, top=top, layers=layers,
                                                           saliency=saliency)}


def _pil(loaded: LoadedModel, name: str, source: bytes | Path) -> Image.Image | np.ndarray:
    """The image at the model's stored size (a full-depth model's: an array at its depth). Each
    is shrunk as soon as it is decoded, so a
    request of 64 large images holds one full-size image at a time, not 64 (+84 MiB each for a
    5,000-pixel PNG); resizing an image already at that size again leaves it as it is."""
    try:
        if isinstance(source, bytes):
            image = decode(source, loaded)
        else:
            image = load_for(source, loaded.preprocess)
    except (InferenceError, ImageError) as exc:
        reason = str(exc).removeprefix("not a usable image: ")
        raise InferenceError(f"{name} is not a usable image: {reason}") from None
    if isinstance(image, np.ndarray):
        return resize_for_input(image, loaded.preprocess)
    with image:
        pixels = resize_for_input(image, loaded.preprocess)
    return to_pil(pixels)
