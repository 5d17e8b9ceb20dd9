"""The in-request half of ``POST /api/models/{id}/segment``: find the snapshot, segment.

Kept out of the router module (as detect_work.py is): it imports torch on the first segment
request, on the server's single inference thread, and the segmenter stays loaded after it. Only
standard segmenters answer (as ``trainyard segment``): a custom network is user code, and
segmentation has no sandboxed worker yet, so it is refused on the store's record of the job,
and again on the checkpoint's own (inference/segmentation/segmenter.py).
"""

from __future__ import annotations

import base64
from pathlib import Path

from trainyard.inference.loader import model_checkpoint
from trainyard.inference.segmentation.answer import segment_images
from trainyard.inference.segmentation.segmenter import cached_segmenter
from trainyard.inference.snapshots import InferenceError
from trainyard.jobs.context import Context
from trainyard.jobs.store.confinement import recorded_user_code
from trainyard.web.schemas.inference import ModelInput, Segmented, SegmentResult

CUSTOM = "custom segmentation networks cannot be run for inference yet; train a standard one"


def segment_sources(ctx: Context, model_id: str, epoch: float | None,
                    sources: list[tuple[str, bytes | Path]]) -> Segmented:
    """The segment response: the answering segmenter's description and one result per image."""
    if recorded_user_code(ctx, model_id):
        raise InferenceError(CUSTOM)
    found_epoch, path = model_checkpoint(ctx.manager.folder(model_id).path, epoch)
    loaded = cached_segmenter(path)
    p = loaded.preprocess
    results = [SegmentResult(image=each.image, areas=each.areas,
                             mask="data:image/png;base64," + base64.b64encode(each.png).decode("ascii"))
               for each in segment_images(loaded, sources)]
    return Segmented(model=model_id, epoch=found_epoch, network=loaded.network, classes=loaded.classes,
                     input=ModelInput(width=p.width, height=p.height, channels=p.channels, resize=p.resize),
                     results=results)
