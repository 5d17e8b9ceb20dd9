"""The augmentation panel's settings, apart from the torch code that applies them (augment.py).

A job spec carries them, and the CLI and the web form validate specs without importing torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from trainyard.core.stored import SpecModel


class AugmentSettings(SpecModel):
    """The augmentation panel. Ranges are symmetric: each sample draws uniformly in ±value."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    flip: Literal["none", "lr", "ud", "both"] = "none"  # each direction with probability 1/2
    quarter_turns: bool = False  # 0/90/180/270 degrees (0/180 when the images are not square)
    rotate_degrees: float = Field(0.0, ge=0, le=180)
    scale_jitter: float = Field(0.0, ge=0, lt=1)  # 0.1 = zoom by a factor in 0.9..1.1
    noise_std: float = Field(0.0, ge=0)  # Gaussian noise, in 0..1 pixel units
    hue_shift: float = Field(0.0, ge=0, le=0.5)  # fraction of the colour circle
    saturation_shift: float = Field(0.0, ge=0, le=1)  # added to HSV saturation (0..1)
    value_shift: float = Field(0.0, ge=0, le=1)  # added to HSV value (0..1)
    contrast: float = Field(0.0, ge=0, le=1)  # 0.2 = scale contrast by 0.8..1.2
    # Detection only (training/detection/mosaic.py): the chance an image becomes a 2 x 2 mosaic
    # window, and the last part of training (percent) that trains on plain images again.
    mosaic: float = Field(0.0, ge=0, le=1)
    mosaic_off_percent: float = Field(0.0, ge=0, le=100)
