"""The input normalisation weights were trained with: per channel ``(x - mean) / std`` on
0..1 pixels.

A user names it when importing weights (``--mean``/``--std``); a trainyard checkpoint records
its own (its ``preprocess`` entry, read by artifact/recorded.py); published entries carry their
library's. Fine-tuning feeds the network exactly that (training/build_run.py), so its BatchNorm
statistics fit its inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainyard.core.errors import InvalidInput

Normalisation = tuple[list[float], list[float]]  # (mean, std), per channel, 0..1 units
MAX_CHANNELS = 4


def parse_values(text: str | Sequence[float] | None, what: str) -> list[float] | None:
    """``"0.5"`` or ``"0.485,0.456,0.406"`` (or a list) -> floats; None for nothing given."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        values = [float(p) for p in parts]
    except (TypeError, ValueError):
        raise InvalidInput(f"{what} {text!r} should be numbers separated by commas, e.g. "
                           "0.485,0.456,0.406") from None
    if not 1 <= len(values) <= MAX_CHANNELS or any(v != v for v in values):  # v != v: NaN
        raise InvalidInput(f"{what} takes one value, or one per channel (at most {MAX_CHANNELS})")
    return values


def given(mean, std) -> Normalisation | None:
    """The normalisation a user typed, checked; one value stands for every channel (a mean of
    three values with one std gets that std thrice). None when neither was given."""
    means, stds = parse_values(mean, "--mean"), parse_values(std, "--std")
    if means is None and stds is None:
        return None
    if means is None or stds is None:
        raise InvalidInput("give both --mean and --std (per channel, 0..1 scale), or neither")
    if any(not 0 <= m <= 1 for m in means):
        raise InvalidInput(f"--mean {means} should be on the 0..1 scale (ImageNet's is 0.485,0.456,0.406)")
    if any(not 0 < s <= 10 for s in stds):
        raise InvalidInput(f"--std {stds} should be positive, on the 0..1 scale (ImageNet's is 0.229,0.224,0.225)")
    channels = max(len(means), len(stds))
    if {len(means), len(stds)} - {1, channels}:
        raise InvalidInput(f"--mean has {len(means)} values and --std {len(stds)}: give one per "
                           "channel for both, or one value for all channels")
    return means * (channels // len(means)), stds * (channels // len(stds))
