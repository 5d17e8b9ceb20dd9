"""A detect response for named images, the same in the server (standard detectors) and in a model
worker (custom ones, inference/worker_process.py): decode, fit, detect, and on demand the layer
views of the first image (views.py) as ``results[0]["visualization"] = {"layers": [...]}``.

Each image is fitted to the stored size as soon as it is decoded, so a request holds one
full-size image at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trainyard.datasets.images import ImageError
from trainyard.datasets.model_input import read_8bit_image
from trainyard.inference.detection.detect import detect_fitted, fitted, model_doc
from trainyard.inference.detection.detector import LoadedDetector
from trainyard.inference.snapshots import InferenceError


def detect_answer(loaded: LoadedDetector, sources: Sequence[tuple[str, bytes | Path]], *, threshold: float,
                  layers: bool = False, epoch: float | None = None) -> dict:
    """``{"threshold", "epoch", "network", "classes", "input", "results": [...]}`` for the images."""
    prepared = []
    for name, source in sources:
        try:
            # a detector is 8-bit: a 16-bit file is scaled to 8 bits (datasets/model_input.py)
            image = read_8bit_image(source, loaded.preprocess.channels)
        except ImageError as exc:
            raise InferenceError(f"{name} is not a usable image: {exc}") from None
        with image:
            prepared.append((name, *fitted(loaded, image)))
    results: list[dict] = []
    if layers and prepared:
        from trainyard.inference.detection.views import with_layer_views  # torch: for the views alone

        results, views = with_layer_views(loaded.model, prepared[0][1],
                                          lambda: detect_fitted(loaded, prepared[:1], threshold))
        results[0]["visualization"] = {"layers": views}
        prepared = prepared[1:]
    results += detect_fitted(loaded, prepared, threshold)
    return {"threshold": threshold, **model_doc(loaded, epoch), "results": results}
