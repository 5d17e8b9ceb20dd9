"""The in-request half of ``POST /api/models/{id}/detect``: find the snapshot, fit, detect.

Kept out of the router module (as classify_work.py is): it imports torch on the first detect
request, on the server's single inference thread, and the detector stays loaded after it.
Each image is fitted to the stored size as soon as it is decoded, so a request holds one
full-size image at a time. A custom detection network (user code) is refused here: the CLI's
``trainyard detect`` runs it in its own process.
"""

from __future__ import annotations

from pathlib import Path

from trainyard.datasets.images import ImageError, load_image, load_image_bytes
from trainyard.inference.detection.detect import detect_fitted, fitted, model_doc
from trainyard.inference.detection.detector import load_detector
from trainyard.inference.loader import InferenceError, model_checkpoint
from trainyard.jobs.context import Context


def detect_sources(ctx: Context, model_id: str, epoch: float | None, sources: list[tuple[str, bytes | Path]], *,
                   threshold: float) -> dict:
    """The detect response: the answering detector's description and one result per image."""
    found_epoch, path = model_checkpoint(ctx.manager.folder(model_id).path, epoch)
    loaded = load_detector(path, user_code=False)
    prepared = []
    for name, source in sources:
        try:
            image = (load_image_bytes(source, loaded.preprocess.channels) if isinstance(source, bytes)
                     else load_image(source, loaded.preprocess.channels))
        except ImageError as exc:
            raise InferenceError(f"{name} is not a usable image: {exc}") from None
        with image:
            prepared.append((name, *fitted(loaded, image)))
    return {"model": model_id, "threshold": threshold, **model_doc(loaded, found_epoch),
            "results": detect_fitted(loaded, prepared, threshold)}
