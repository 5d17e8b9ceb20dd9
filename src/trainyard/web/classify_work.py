"""The in-request half of ``POST /api/models/{id}/classify``: load (or reuse) the model, answer.

Kept out of the router module on purpose: it imports torch (and ONNX Runtime on first use), and
the router is imported at server start-up. The server's single inference thread calls
`classify_sources` (routers/inference.py), so torch loads on the first classify request and
stays warm after it: the server is the long-lived inference worker the CLI's ``classify`` asks.
"""

from __future__ import annotations

from pathlib import Path

from trainyard.datasets.images import ImageError, load_image
from trainyard.inference.classify import decode
from trainyard.inference.loader import InferenceError, LoadedModel, load_model, model_checkpoint
from trainyard.inference.responses import classify_named, model_doc


def loaded_model(ctx, model_id: str, epoch: float | None) -> LoadedModel:
    """The model job's checkpoint for ``epoch`` (None: latest), loaded or from the cache."""
    _, path = model_checkpoint(ctx.manager.folder(model_id).path, epoch)
    return load_model(path)


def _pil(loaded: LoadedModel, name: str, source: bytes | Path):
    try:
        if isinstance(source, bytes):
            return decode(source, loaded)
        return load_image(source, loaded.preprocess["channels"])
    except (InferenceError, ImageError) as exc:
        raise InferenceError(f"{name} is not a usable image: {str(exc).removeprefix('not a usable image: ')}") from None


def classify_sources(ctx, model_id: str, epoch: float | None, sources: list[tuple[str, bytes | Path]], *,
                     top: int, visualize: bool, saliency: bool) -> dict:
    """The classify response: the answering model's description and one result per image."""
    loaded = loaded_model(ctx, model_id, epoch)
    images = [(name, _pil(loaded, name, source)) for name, source in sources]
    results = classify_named(loaded, images, top=top, layers=visualize, saliency=saliency or visualize)
    return {"model": model_id, **model_doc(loaded), "results": results}
