"""The in-request half of ``POST /api/models/{id}/classify``: find the snapshot, answer.

Kept out of the router module on purpose: it imports torch (and ONNX Runtime on first use), and
the router is imported at server start-up. The server's single inference thread calls
`classify_sources` (routers/inference.py), so torch loads on the first classify request and
stays warm after it: the server is the long-lived inference worker the CLI's ``classify`` asks.
A standard network answers in this process; a custom one (user code) from its own worker
process (inference/worker_pool.py).
"""

from __future__ import annotations

from pathlib import Path

from trainyard.inference.loader import model_checkpoint
from trainyard.inference.worker_pool import classify_checkpoint
from trainyard.jobs.context import Context
from trainyard.jobs.store.confinement import recorded_user_code
from trainyard.web.schemas.inference import Classified


def classify_sources(ctx: Context, model_id: str, epoch: float | None, sources: list[tuple[str, bytes | Path]], *,
                     top: int, visualize: bool, saliency: bool) -> Classified:
    """The classify response: the answering model's description and one result per image."""
    _, path = model_checkpoint(ctx.manager.folder(model_id).path, epoch)
    # Whether its network is user code: the store's record of the job, not the checkpoint's claim.
    custom = recorded_user_code(ctx, model_id)
    doc = classify_checkpoint(path, sources, top=top, layers=visualize, saliency=saliency or visualize,
                              custom=custom)
    return Classified(model=model_id, **doc)  # the answer, from this process or the model's worker
