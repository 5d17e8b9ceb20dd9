"""Split labelled samples into train / val / test, per class, reproducibly.

Per class, after shuffling with the seed and capping at ``max_per_class``:

    n_val  = floor(n * val_percent / 100)
    n_test = floor(n * test_percent / 100)
    n_train = n - n_val - n_test

so 10 images at 25 % give 2 for val and 8 for train. Because the percents sum to less than
100, every kept class keeps at least one training image. Classes with fewer than
``min_per_class`` images are dropped with a warning, and the remaining classes are renumbered
so labels stay 0..K-1 in the original order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from trainyard.datasets.sources import Sample

T = TypeVar("T")

# Guards the floor against float noise (e.g. 29 * 34.4 / 100 must not become 9.97...).
_EPS = 1e-9


@dataclass
class SplitResult:
    """Samples per split ("train", "val", "test"), relabelled to ``classes``."""

    splits: dict[str, list[Sample]]
    classes: list[str]
    warnings: list[str] = field(default_factory=list)
    # old label -> new label, for relabelling samples from other sources (val/test folders)
    remap: dict[int, int] = field(default_factory=dict)


def split_counts(n: int, val_percent: float, test_percent: float) -> tuple[int, int, int]:
    """(n_train, n_val, n_test) for a class of ``n`` images."""
    n_val = math.floor(n * val_percent / 100 + _EPS)
    n_test = math.floor(n * test_percent / 100 + _EPS)
    return n - n_val - n_test, n_val, n_test


def split_off(samples: Sequence[T], val_percent: float, test_percent: float, seed: int,
              salt: int) -> tuple[list[T], list[T], list[T]]:
    """(train, val, test) of one pool without classes (detection's images, multi-label rows,
    segmentation's pairs): `split_counts` of them drawn with the seed (``salt``: the task's own
    draw) go to val, then test; each part keeps the pool's order."""
    _, n_val, n_test = split_counts(len(samples), val_percent, test_percent)
    order = np.random.default_rng([seed, salt]).permutation(len(samples))
    pick = lambda part: [samples[i] for i in sorted(part)]  # noqa: E731
    return pick(order[n_val + n_test:]), pick(order[:n_val]), pick(order[n_val:n_val + n_test])


def _by_class(samples: Iterable[Sample], n_classes: int) -> list[list[Sample]]:
    groups: list[list[Sample]] = [[] for _ in range(n_classes)]
    for s in samples:
        groups[s.label].append(s)
    return groups


def split_per_class(
    samples: list[Sample],
    classes: list[str],
    val_percent: float,
    test_percent: float,
    min_per_class: int = 2,
    max_per_class: int | None = None,
    seed: int = 0,
    existing: Mapping[int, int] | None = None,
) -> SplitResult:
    """Split ``samples`` (labels index ``classes``) per class; see the module docstring.

    ``existing`` maps a label to images it already has elsewhere (a parent dataset being
    appended to): such classes are never dropped, and ``max_per_class`` counts those images.
    """
    existing = dict(existing or {})
    groups = _by_class(samples, len(classes))
    splits: dict[str, list[Sample]] = {"train": [], "val": [], "test": []}
    kept: list[str] = []
    remap: dict[int, int] = {}
    warnings: list[str] = []
    for label, group in enumerate(groups):
        held = existing.get(label)
        if held is None and len(group) < min_per_class:
            warnings.append(
                f"class {classes[label]!r} dropped: {len(group)} image(s), "
                f"fewer than the minimum of {min_per_class}"
            )
            continue
        remap[label] = len(kept)
        kept.append(classes[label])
        group = sorted(group, key=lambda s: str(s.path))  # independent of scan order
        np.random.default_rng([seed, label]).shuffle(group)
        if max_per_class is not None:
            group = group[: max(0, max_per_class - (held or 0))]
        _, n_val, n_test = split_counts(len(group), val_percent, test_percent)
        new = [Sample(s.path, remap[label]) for s in group]
        splits["val"] += new[:n_val]
        splits["test"] += new[n_val : n_val + n_test]
        splits["train"] += new[n_val + n_test :]
    # Mix the classes, so a split read in order is not sorted by class.
    for i, name in enumerate(("train", "val", "test")):
        np.random.default_rng([seed, 1_000_003, i]).shuffle(splits[name])
    return SplitResult(splits, kept, warnings, remap)


def relabel(samples: Iterable[Sample], remap: Mapping[int, int]) -> list[Sample]:
    """Apply a label remap, dropping samples whose class was dropped."""
    return [Sample(s.path, remap[s.label]) for s in samples if s.label in remap]
