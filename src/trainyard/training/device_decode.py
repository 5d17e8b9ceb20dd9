"""JPEG batches decoded on the GPU: nvJPEG through ``torchvision.io.decode_jpeg(device="cuda")``.

A 256x256 JPEG costs ~0.74 ms to decode on a host core, so one H200 at ~3,000 images/s would
need more than two cores for decoding alone. With a CUDA device and a ``jpeg`` split, the
loader's threads only read the stored bytes (a memory map slice per image) and nvJPEG decodes
the whole batch on the device, straight into the (N, H, W, C) uint8 layout ``read_batch`` gives.
Anything missing (no CUDA, another encoding, a torchvision without the GPU decoder) keeps the
CPU path; so does a first batch that fails to decode on the device (the reason is logged once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import torch

from trainyard.datasets.storage import SplitReader

log = logging.getLogger(__name__)

Decoder = Callable[[np.ndarray], torch.Tensor]  # indices -> (N, H, W, C) uint8 on the device


def device_decoder(reader: SplitReader, device: torch.device, force: bool = False) -> Decoder | None:
    """A batch decoder on ``device`` for a JPEG split, or None where the CPU path should run.

    ``force``: build it whatever the device (tests run the same code with torchvision's CPU
    decoder).
    """
    if reader.encoding != "jpeg" or not (force or device.type == "cuda"):
        return None
    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except ImportError:
        return None
    mode = ImageReadMode.GRAY if reader.shape[2] == 1 else ImageReadMode.RGB

    def decode(indices: np.ndarray) -> torch.Tensor:
        data = [torch.frombuffer(bytearray(reader.read_encoded(int(i))), dtype=torch.uint8) for i in indices]
        images = decode_jpeg(data, mode=mode, device=device)
        return torch.stack(images).permute(0, 2, 3, 1)  # (N, C, H, W) -> the NHWC view the loader expects

    return decode


class GuardedDecoder:
    """The device decoder until it fails once; from then on, None (the caller reads on the CPU)."""

    def __init__(self, decoder: Decoder | None):
        self.decoder = decoder

    def __call__(self, indices: np.ndarray) -> torch.Tensor | None:
        if self.decoder is None:
            return None
        try:
            return self.decoder(indices)
        except (RuntimeError, ValueError) as exc:  # no nvJPEG in this build, a device error
            log.warning("decoding JPEGs on the device failed (%s); decoding on the CPU instead", exc)
            self.decoder = None
            return None
