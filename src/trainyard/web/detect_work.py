"""The in-request half of ``POST /api/models/{id}/detect``: find the snapshot, detect.

Kept out of the router module (as classify_work.py is): it imports torch on the first detect
request, on the server's single inference thread, and the detector stays loaded after it. A
standard detector answers in this process; a custom one (user code) from its sandboxed worker
(inference/detection/confined.py). ``visualize`` adds the first image's layer views.
"""

from __future__ import annotations

from pathlib import Path

from trainyard.inference.detection.confined import detect_checkpoint
from trainyard.inference.loader import model_checkpoint
from trainyard.jobs.context import Context
from trainyard.jobs.store.confinement import recorded_user_code
from trainyard.web.schemas.inference import Detected


def detect_sources(ctx: Context, model_id: str, epoch: float | None, sources: list[tuple[str, bytes | Path]], *,
                   threshold: float, visualize: bool = False) -> Detected:
    """The detect response: the answering detector's description and one result per image."""
    found_epoch, path = model_checkpoint(ctx.manager.folder(model_id).path, epoch)
    # Whether its network is user code: the store's record of the job, not the checkpoint's claim.
    doc = detect_checkpoint(path, sources, threshold=threshold, layers=visualize, epoch=found_epoch,
                            custom=recorded_user_code(ctx, model_id))
    return Detected(model=model_id, **doc)  # the answer, from this process or the detector's worker
