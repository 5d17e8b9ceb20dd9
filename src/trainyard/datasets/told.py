"""A classification build's depth and channels when its spec leaves them to the files.

A folder of 16-bit PNGs builds at 16 bits with no option: before the writers open, the headers
of up to `SAMPLE` files spread over the training images are read (no pixels decoded). Any
16-bit file makes the dataset 16-bit; channels not given follow the files when they are 16-bit
or N-channel (the most common count among them). A file the sample missed that does not fit is
reported by the build, per file: a 16-bit one in an 8-bit dataset (decode_worker.py), a TIFF
with another channel count (deep.py).
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from trainyard.datasets import disk_check
from trainyard.datasets.collect import BuildPlan
from trainyard.datasets.deep import probe
from trainyard.datasets.images import ImageError

SAMPLE = 64


class Told(NamedTuple):
    depth: int
    channels: int
    convert_deep: bool  # the user asked for 8 bits: 16-bit files are scaled down, not skipped
    note: str | None = None  # what the build should tell: 8-bit files seen in a 16-bit dataset


def told_by_files(spec, plan: BuildPlan) -> Told:
    """The spec's depth and channels, each completed by the files where the spec is silent."""
    given_channels = spec.channels is not None
    if spec.depth is not None and given_channels:
        return Told(spec.depth, spec.image_channels, spec.depth == 8)
    probes = []
    for table in plan.splits.values():
        for i in disk_check.spread(len(table), SAMPLE):
            try:
                probes.append(probe(table.path(int(i))))
            except ImageError:
                continue  # the build reports it, with the reason its decode gives
    depth = spec.depth or (16 if any(p.depth == 16 for p in probes) else 8)
    counts = Counter(p.channels for p in probes
                     if p.channels is not None and (p.depth == 16 or p.channels not in (1, 3)))
    channels = spec.image_channels
    if not given_channels and counts and (depth == 16 or any(c not in (1, 3) for c in counts)):
        channels = counts.most_common(1)[0][0]
    eight = sum(p.depth == 8 for p in probes)
    note = (f"{eight} of the {len(probes)} files sampled are 8-bit: they are scaled to 16 bits "
            f"(x 257, 255 becomes 65535)") if depth == 16 and eight else None
    return Told(depth, channels, spec.depth == 8, note)
