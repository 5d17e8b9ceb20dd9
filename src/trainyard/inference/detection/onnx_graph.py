"""A detector as one ONNX graph with its post-processing, checked against PyTorch.

The graph takes one stored-size image, ``images`` float32 (1, C, H, W) in 0..1, and gives the
detector's final answer: ``boxes`` (K, 4) x1, y1, x2, y2 in stored pixels, ``scores`` (K,) and
``labels`` (K,) int64, the dataset's class indices (the background offset is taken off inside).
Everything torchvision does after the backbone is in it: its resize and normalisation, the box
decoding, score thresholds, per-class NMS and the top detections, so a deployed model needs no
code of ours. Exported with the TorchScript exporter (opset 17), which torchvision's detectors
support for one image at a time; a batch runs image by image.

The check runs PyTorch and ONNX Runtime on sample images (the dataset's own where it is still
there, else noise) and requires the same boxes above ``CHECK_SCORE``, the archive's detection
threshold (a weak model's near-zero scores are numerically fragile and no user sees them): each
PyTorch box must have an ONNX Runtime box of the same class within ``BOX_ATOL`` pixels and
``SCORE_ATOL`` in score, and the reverse; boxes whose score is within ``SCORE_ATOL`` of the
cut-off may be on either side. ``force`` ships a graph that disagrees anyway, its measured
disagreement recorded in the figures (``forced``, ``unmatched_boxes``, ``disagreement``).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from trainyard.inference.onnx_export import _EXPORT_LOCK, ExportError, torchscript_export
from trainyard.networks.detection import label_offset

INPUT = "images"
OUTPUTS = ("boxes", "scores", "labels")
CHECK_SCORE = 0.5  # the threshold of the archive's scripts (detection/archive.py)
BOX_ATOL, SCORE_ATOL = 0.05, 1e-3


class _Detections(nn.Module):
    """One image in, (boxes, scores, labels) out: the detector's answer as plain tensors."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.offset = label_offset(model)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if images.shape[1] == 1:
            images = images.expand(-1, 3, -1, -1)
        found = self.model(images)[0]
        return found["boxes"], found["scores"], found["labels"] - self.offset


def export_detector(model: nn.Module, shape: tuple[int, int, int]) -> bytes:
    """``model`` (eval mode) as ONNX bytes: images (1, C, H, W) -> boxes, scores, labels."""
    wrapped = _Detections(model.eval()).eval()
    example = torch.rand((1, *shape), generator=torch.Generator().manual_seed(0))
    buffer = io.BytesIO()
    with _EXPORT_LOCK, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notices about torchvision's shape arithmetic
        try:
            torchscript_export(wrapped, example, buffer, [INPUT], list(OUTPUTS),
                               {name: {0: "detections"} for name in OUTPUTS})
        except Exception as exc:
            first_line = (str(exc).strip().splitlines() or [""])[0][:300]
            raise ExportError(f"the detector cannot be exported to ONNX: {type(exc).__name__}: "
                              f"{first_line}") from exc
    return buffer.getvalue()


def check_detector(onnx_bytes: bytes, model: nn.Module, images: Sequence[np.ndarray], *,
                   threshold: float = CHECK_SCORE, force: bool = False) -> dict:
    """Compare ONNX Runtime's boxes with PyTorch's above ``threshold`` on ``images`` ((H, W, C)
    uint8 each); ExportError on a disagreement unless ``force``."""
    import onnxruntime as ort

    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    wrapped = _Detections(model.eval()).eval()
    total = _Agreement()
    for pixels in images:
        x = torch.from_numpy(np.ascontiguousarray(pixels)).permute(2, 0, 1)[None].float() / 255
        with torch.no_grad():
            expected = [t.numpy() for t in wrapped(x)]
        total.add(expected, session.run(list(OUTPUTS), {INPUT: x.numpy()}), threshold)
    if total.unmatched and not force:
        raise ExportError(f"{total.first}; the export is refused rather than shipping a model that answers "
                          "differently (force it to ship anyway, its measured difference recorded)")
    figures: dict = {"images": len(images), "boxes_compared": total.compared, "max_box_diff": total.box,
               "max_score_diff": total.score, "min_score": threshold, "box_atol": BOX_ATOL,
               "score_atol": SCORE_ATOL}
    if force:
        figures.update(forced=True, unmatched_boxes=total.unmatched, disagreement=total.first)
    return figures


class _Agreement:
    """The running comparison: the largest differences of matched boxes, and the unmatched ones."""

    def __init__(self) -> None:
        self.box = self.score = 0.0
        self.compared = self.unmatched = 0
        self.first: str | None = None  # the first unmatched box, in words

    def add(self, expected: list[np.ndarray], got: list[np.ndarray], threshold: float) -> None:
        for (a, b, direction) in ((expected, got, "PyTorch"), (got, expected, "ONNX Runtime")):
            boxes_a, scores_a, labels_a = a
            boxes_b, scores_b, labels_b = b
            for i in np.flatnonzero(scores_a >= threshold + SCORE_ATOL):
                same = (labels_b == labels_a[i]) & (np.abs(scores_b - scores_a[i]) <= SCORE_ATOL)
                diffs = np.abs(boxes_b - boxes_a[i]).max(axis=1) if len(boxes_b) else np.zeros(0)
                close = same & (diffs <= BOX_ATOL)
                if not close.any():
                    self.unmatched += 1
                    self.first = self.first or (f"ONNX Runtime and PyTorch disagree: {direction}'s box "
                                                f"{np.round(boxes_a[i], 2)} (score {scores_a[i]:.3f}) has no "
                                                "match in the other")
                    continue
                j = int(np.flatnonzero(close)[np.argmin(diffs[close])])
                self.box = max(self.box, float(diffs[j]))
                self.score = max(self.score, float(abs(scores_b[j] - scores_a[i])))
        self.compared += int((expected[1] >= threshold + SCORE_ATOL).sum())
