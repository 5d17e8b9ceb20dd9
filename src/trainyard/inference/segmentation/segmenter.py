"""A segmentation checkpoint loaded for inference, and the mask it answers for an image.

The network is built from its checkpoint (a standard network by name; custom segmentation
networks are not run here, since their code would run unconfined) in eval mode. An image is read
as the dataset build reads it (upright, 1 or 3 channels), squashed to the stored size, fed as
pixels / 255 (as training fed it), and the arg-max mask is resized back to the image's own size
by nearest neighbour: one class index per pixel of the original image.

``trainyard segment`` and ``POST /api/models/{id}/segment`` both call `LoadedSegmenter.mask` and
`mask_png`, so a mask's PNG is the same bytes from either. The server keeps the last few
segmenters loaded (`cached_segmenter`), keyed by the file's path, modification time and size.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from trainyard.artifact.checkpoint import CheckpointHeader, build_model_from_checkpoint, load_checkpoint
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.datasets.model_input import read_8bit_image
from trainyard.inference.model_cache import ModelCache, file_key
from trainyard.inference.snapshots import InferenceError

if TYPE_CHECKING:
    from torch import nn

TASK = "segmentation"
CACHE_SIZE = 2  # the server keeps the two segmenters last used
_cache: ModelCache[LoadedSegmenter] = ModelCache(CACHE_SIZE)


@dataclass
class LoadedSegmenter:
    path: Path
    model: nn.Module
    classes: list[str]
    preprocess: Preprocessing
    device: str = "cpu"
    network: str | None = None  # the standard network's name

    def logits(self, batch: np.ndarray) -> np.ndarray:
        """(N, H, W, C) uint8 stored-size images -> (N, H, W) uint8 class indices."""
        import torch

        x = torch.from_numpy(np.array(batch, np.uint8)).permute(0, 3, 1, 2).float().div_(255)  # a copy: writable
        with torch.inference_mode():
            out = self.model(x.to(self.device))
        return out.argmax(1).to(torch.uint8).cpu().numpy()

    def mask(self, source: Path | bytes) -> np.ndarray:
        """The (h, w) uint8 class indices of the image at ``source`` (a path, or an upload's
        bytes), at its own size; ImageError when it is not a usable image."""
        p = self.preprocess
        image = read_8bit_image(source, p.channels)  # a 16-bit file: scaled to 8 bits
        with image as img:
            size = img.size
            fitted = np.asarray(img.resize((p.width, p.height), Image.Resampling.BILINEAR), np.uint8)
        found = self.logits(fitted.reshape(1, p.height, p.width, p.channels))[0]
        return np.asarray(Image.fromarray(found).resize(size, Image.Resampling.NEAREST), np.uint8)


def load_segmenter(path: str | Path, device: str = "cpu") -> LoadedSegmenter:
    """The segmenter of checkpoint ``path``; InferenceError for another task's or a custom one."""
    checkpoint = load_checkpoint(path)
    header = CheckpointHeader.of(checkpoint)
    if header.task != TASK:
        raise InferenceError(f"{Path(path).name} is a {header.task} model, not a segmentation model")
    if header.network_source:
        raise InferenceError("custom segmentation networks cannot be run for inference yet; train a standard one")
    model = build_model_from_checkpoint(checkpoint).to(device)
    return LoadedSegmenter(Path(path), model, list(header.classes), Preprocessing.of_checkpoint(checkpoint), device,
                           header.network)


def cached_segmenter(path: Path, device: str = "cpu") -> LoadedSegmenter:
    """`load_segmenter`'s answer, from the cache while the file is unchanged (the server's: a
    request must not read the checkpoint again)."""
    key = (*file_key(path.resolve(), InferenceError), device)
    return _cache.get(key, lambda: load_segmenter(path, device))


def mask_png(mask: np.ndarray) -> bytes:
    """``mask`` as an 8-bit index PNG (each pixel's value its class index)."""
    out = io.BytesIO()
    Image.fromarray(mask, mode="L").save(out, format="PNG")
    return out.getvalue()


def save_mask(mask: np.ndarray, path: Path) -> None:
    """``mask`` written as `mask_png`'s bytes: the file the REST answer's PNG equals."""
    path.write_bytes(mask_png(mask))


def areas(mask: np.ndarray, classes: list[str]) -> dict[str, float]:
    """Each class's share of the mask's pixels (0..1)."""
    counts = np.bincount(mask.reshape(-1), minlength=len(classes))[:len(classes)]
    return {name: round(float(n) / max(mask.size, 1), 6) for name, n in zip(classes, counts, strict=True)}
