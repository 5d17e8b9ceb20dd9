"""What a file of unknown origin records about its network's input, for using it as weights.

Importing weights into the store (weights/store.py) and fine-tuning from a file
(training/transfer.py) take any file a user names. A trainyard checkpoint's ``preprocess``
entry (preprocessing.py) records the input size its network was trained on and the
normalisation it was fed; a plain state dict or another program's file records neither, and an
entry made by hand may say one and not the other. `RecordedInput` reads what there is, once:
what the file does not say, or says in a form no trainyard wrote, is None, never an error.

Unlike `Preprocessing.from_dict`, which reads a checkpoint trainyard made and trusts it, this
reads each fact on its own, so a partial entry still gives the facts it holds. Only this
package reads the entry's keys; the callers read the two attributes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainyard.artifact.preprocessing import NO_MEAN


@dataclass(frozen=True)
class RecordedInput:
    """The input size and the normalisation a file's network was trained with, where it says."""

    input_size: tuple[int, int, int] | None = None  # (C, H, W): the crop, else the stored images' size
    normalisation: tuple[list[float], list[float]] | None = None  # per channel (mean, std), 0..1 units

    @classmethod
    def of_file(cls, path: str | os.PathLike) -> RecordedInput:
        """What the file at ``path`` records: nothing for a .safetensors file (tensors only) or
        a file torch cannot load (the caller says what is wrong with it when it reads its tensors)."""
        if Path(path).suffix == ".safetensors":
            return cls()
        import torch

        try:
            loaded = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except Exception:
            return cls()
        return cls.of_loaded(loaded)

    @classmethod
    def of_loaded(cls, loaded: object) -> RecordedInput:
        """What ``loaded`` (what torch.load gave, whatever it holds) records in its ``preprocess``."""
        entry = loaded.get("preprocess") if isinstance(loaded, Mapping) else None
        if not entry or not isinstance(entry, Mapping):
            return cls()
        return cls(_input_size(entry), _normalisation(entry))


def _input_size(entry: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """(C, H, W) the network was trained on: its crop, else its dataset's images; None when the
    entry does not say."""
    try:
        height, width = (entry["crop"], entry["crop"]) if entry.get("crop") else (entry["height"], entry["width"])
        return int(entry["channels"]), int(height), int(width)
    except (KeyError, TypeError, ValueError):
        return None


def _normalisation(entry: Mapping[str, Any]) -> tuple[list[float], list[float]] | None:
    """The per-channel (mean, std) the network was fed, on the 0..1 scale.

    The entry holds the mean subtracted (an (H, W, C) image in 0..255, or none) and, when the
    network was fine-tuned from published weights, their std. A per-pixel mean image is taken by
    its channel average (another dataset's images have another size). None when the entry names
    no mean mode, or names one whose mean was dropped (an export's cached inputs hold none).
    """
    if "mean_mode" not in entry:
        return None
    import numpy as np

    mean, mode = entry.get("mean"), entry["mean_mode"]
    if mean is None and mode != NO_MEAN:
        return None
    try:
        channels = int(entry.get("channels") or (np.asarray(mean).shape[-1] if mean is not None else 3))
        if mode == NO_MEAN or mean is None:
            means = [0.0] * channels
        else:
            image = np.asarray(mean.numpy() if hasattr(mean, "numpy") else mean, np.float64)
            means = [float(v) / 255.0 for v in image.reshape(-1, image.shape[-1]).mean(axis=0)]
        stds = [float(s) for s in entry["std"]] if entry.get("std") else [1.0] * len(means)
    except (TypeError, ValueError, IndexError):  # no trainyard wrote this: it says nothing usable
        return None
    return means, stds
