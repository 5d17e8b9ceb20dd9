"""The artefact's preprocessing as one frozen object: how an image becomes this network's input.

timm's ``PretrainedCfg`` is the model: a frozen record made once where the facts enter (a
checkpoint's ``preprocess`` entry, the JSON an export caches beside a checkpoint, a downloaded
archive's preprocess.json) and passed typed to training, inference, export and the archive's
writer. Only this package reads the stored dict; everyone else reads attributes.

The stored format does not change: `to_dict` writes exactly the entry checkpoints hold
(``{width, height, channels, resize, mean_mode, crop, mean, scale, std}``, std a list), and
`from_dict` also reads older entries, which may lack ``scale``, ``std``, ``crop``, ``resize``
or ``mean_mode`` (the defaults are what those versions did). ``depth`` (bits per sample) is
written only for a 16-bit model, so an 8-bit entry is what it always was.

No torch here: ``mean`` is kept as it was given (a torch tensor in a checkpoint, a numpy array,
or None once dropped for JSON), so writing it back gives the same checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainyard.core.tasks import known_task, task_traits
from trainyard.core.vocabulary import MAX_CHANNELS, MEAN_MODES, RESIZE_MODES

SCALE = "0..1"  # inputs are pixel / full scale (255, or 65535 at 16 bits), then the mean, then the std
DEPTHS = (8, 16)
DEFAULT_RESIZE = "squash"
NO_MEAN = "none"
MAX_SIDE = 4096  # an archive's stored image size, at most
DETECTION_RESIZE = ("pad", "squash")  # datasets/detection/geometry.py's (not imported: it loads Pillow)


@dataclass(frozen=True)
class Preprocessing:
    """Size, channels, resize mode, mean, crop, scale and std of a model's input."""

    width: int  # the stored (resized) image size, before the crop
    height: int
    channels: int  # 1 (grayscale), 3 (RGB), or N (a multi-channel TIFF dataset)
    resize: str = DEFAULT_RESIZE  # the dataset build's resize mode (datasets/resize.py)
    mean_mode: str = NO_MEAN  # one of MEAN_MODES
    crop: int | None = None  # the central (or, training, random) crop x crop window
    # (H, W, C) float32 in 0..255 (a tensor in a checkpoint), or None: no mean or dropped for JSON.
    # Arrays have no == or hash worth having: two objects compare by their other fields.
    mean: Any = field(default=None, compare=False, repr=False)
    scale: str = SCALE
    std: tuple[float, ...] | None = None  # per channel, divided after the mean (fine-tuned weights,
    # or a 16-bit or N-channel dataset's own)
    depth: int = 8  # bits per sample of the stored images: 8, or 16 (read at full depth)

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> Preprocessing:
        """A checkpoint's ``preprocess`` entry (this version's or an older one's), or the same
        entry without its mean as an export's cached inputs hold it."""
        crop = stored.get("crop")
        std = stored.get("std")
        return cls(width=int(stored["width"]), height=int(stored["height"]), channels=int(stored["channels"]),
                   resize=stored.get("resize") or DEFAULT_RESIZE, mean_mode=stored.get("mean_mode") or NO_MEAN,
                   crop=int(crop) if crop else None, mean=stored.get("mean"),
                   scale=stored.get("scale") or SCALE, std=tuple(float(s) for s in std) if std else None,
                   depth=int(stored.get("depth") or 8))

    @classmethod
    def of_checkpoint(cls, checkpoint: Mapping[str, Any]) -> Preprocessing:
        """The preprocessing a checkpoint records."""
        return cls.from_dict(checkpoint["preprocess"])

    def to_dict(self, *, with_mean: bool = True) -> dict[str, Any]:
        """The stored entry: a checkpoint's (``with_mean``), or JSON's (no ``mean`` key)."""
        stored: dict[str, Any] = {
            "width": self.width, "height": self.height, "channels": self.channels, "resize": self.resize,
            "mean_mode": self.mean_mode, "crop": self.crop, "mean": self.mean, "scale": self.scale,
            "std": list(self.std) if self.std else None,
        }
        if not with_mean:
            del stored["mean"]
        if self.depth != 8:
            stored["depth"] = self.depth
        return stored

    def replace(self, **changes: Any) -> Preprocessing:
        """A copy with ``changes`` (the object itself never changes)."""
        return dataclasses.replace(self, **changes)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """(C, h, w) of the network input: the crop, else the stored image size."""
        return (self.channels, self.crop or self.height, self.crop or self.width)

    @property
    def stored_shape(self) -> tuple[int, int, int]:
        """(H, W, C) of a stored image and of the mean image."""
        return (self.height, self.width, self.channels)

    @property
    def full_depth(self) -> bool:
        """Whether images are read as arrays at full depth (datasets/deep.py), not as 8-bit L/RGB."""
        return self.depth != 8 or self.channels not in (1, 3)

    @property
    def subtracts_mean(self) -> bool:
        """Whether a mean is subtracted: a mode other than "none", and a mean to subtract."""
        return self.mean_mode != NO_MEAN and self.mean is not None


def from_document(doc: Mapping[str, Any]) -> tuple[Preprocessing, int]:
    """The preprocessing (without mean) and the network's image_size of an archive's
    preprocess.json, checked; ValueError says what is wrong (an archive is anyone's file)."""
    try:
        width, height, channels = int(doc["width"]), int(doc["height"]), int(doc["channels"])
        resize, mean_mode = doc.get("resize", DEFAULT_RESIZE), doc.get("mean_mode", NO_MEAN)
        crop = int(doc["crop"]) if doc.get("crop") else None
        depth = int(doc.get("depth") or 8)
        image_size = int(doc.get("image_size") or crop or min(width, height))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"missing or bad field {exc}") from None
    problems = []
    if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE):
        problems.append(f"size {width}x{height} is outside 1..{MAX_SIDE}")
    if not 1 <= channels <= MAX_CHANNELS:
        problems.append(f"channels {channels} is outside 1..{MAX_CHANNELS}")
    if depth not in DEPTHS:
        problems.append(f"depth {depth} is not 8 or 16")
    boxes = task_traits(known_task(doc.get("task"))).boxes
    modes = DETECTION_RESIZE if boxes else RESIZE_MODES  # a detector's: pad, squash
    if resize not in modes:
        problems.append(f"resize {resize!r} is not one of {', '.join(modes)}")
    if mean_mode not in MEAN_MODES:
        problems.append(f"mean_mode {mean_mode!r} is not one of {', '.join(MEAN_MODES)}")
    if crop is not None and not 0 < crop <= min(width, height):
        problems.append(f"crop {crop} does not fit the {width}x{height} images")
    if doc.get("scale", SCALE) != SCALE:
        problems.append(f"scale {doc.get('scale')!r} is not {SCALE!r}")
    std = _document_std(doc.get("std"), channels, problems)
    if problems:
        raise ValueError("; ".join(problems))
    # A model fine-tuned from published weights was fed (pixel / 255 - mean) / std: so is its import.
    return (Preprocessing(width, height, channels, resize, mean_mode, crop, scale=SCALE, std=std, depth=depth),
            image_size)


def _document_std(value: Any, channels: int, problems: list[str]) -> tuple[float, ...] | None:
    """preprocess.json's std (null, or one positive number per channel, or one for all)."""
    if value is None:
        return None
    try:
        std = tuple(float(s) for s in value)
    except (TypeError, ValueError):
        std = ()
    if len(std) not in (1, channels) or not all(math.isfinite(s) and s > 0 for s in std):
        problems.append(f"std {value!r} is not {channels} positive numbers")
        return None
    return std
