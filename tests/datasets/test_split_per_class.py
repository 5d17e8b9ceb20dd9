"""Per-class split arithmetic, dropping small classes, caps and reproducibility."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainyard.datasets.sources import Sample
from trainyard.datasets.splits import relabel, split_counts, split_per_class


def samples(counts: list[int]) -> list[Sample]:
    return [Sample(Path(f"c{label}/{i}.png"), label) for label, n in enumerate(counts) for i in range(n)]


def per_class(split: list[Sample]) -> dict[int, int]:
    out: dict[int, int] = {}
    for s in split:
        out[s.label] = out.get(s.label, 0) + 1
    return out


@pytest.mark.parametrize(
    "n, val, test, expected",
    [
        (10, 25, 0, (8, 2, 0)),  # floor(2.5) = 2
        (10, 25, 10, (7, 2, 1)),
        (3, 25, 0, (3, 0, 0)),  # floor(0.75) = 0: tiny classes keep everything for training
        (4, 25, 0, (3, 1, 0)),
        (100, 33.3, 33.3, (34, 33, 33)),
        (7, 0, 0, (7, 0, 0)),
        (1, 99, 0, (1, 0, 0)),
    ],
)
def test_split_counts(n, val, test, expected):
    assert split_counts(n, val, test) == expected


def test_split_per_class_counts_and_disjoint():
    data = samples([10, 20])
    result = split_per_class(data, ["a", "b"], 25, 10)
    assert per_class(result.splits["val"]) == {0: 2, 1: 5}
    assert per_class(result.splits["test"]) == {0: 1, 1: 2}
    assert per_class(result.splits["train"]) == {0: 7, 1: 13}
    paths = [s.path for split in result.splits.values() for s in split]
    assert len(paths) == len(set(paths)) == 30


def test_small_classes_dropped_and_labels_remapped():
    result = split_per_class(samples([5, 1, 5]), ["a", "b", "c"], 20, 0, min_per_class=2)
    assert result.classes == ["a", "c"]
    assert result.remap == {0: 0, 2: 1}
    assert len(result.warnings) == 1
    assert "'b'" in result.warnings[0] and "1 image" in result.warnings[0]
    labels = {s.label for split in result.splits.values() for s in split}
    assert labels == {0, 1}
    assert all(s.path.parts[0] == ("c0" if s.label == 0 else "c2") for s in result.splits["train"])
    assert relabel([Sample(Path("x"), 1), Sample(Path("y"), 2)], result.remap) == [Sample(Path("y"), 1)]


def test_max_per_class_caps_before_splitting():
    result = split_per_class(samples([50, 8]), ["a", "b"], 25, 0, max_per_class=20)
    assert per_class(result.splits["train"]) == {0: 15, 1: 6}
    assert per_class(result.splits["val"]) == {0: 5, 1: 2}


def test_same_seed_same_split_other_seed_differs():
    def val_paths(seed):
        return [s.path for s in split_per_class(samples([40, 40]), ["a", "b"], 25, 0, seed=seed).splits["val"]]

    assert val_paths(3) == val_paths(3)
    assert val_paths(3) != val_paths(4)
    # The order samples arrive in does not matter, only the seed.
    shuffled = list(reversed(samples([40, 40])))
    assert [s.path for s in split_per_class(shuffled, ["a", "b"], 25, 0, seed=3).splits["val"]] == val_paths(3)


def test_existing_images_keep_a_class_and_count_against_the_cap():
    result = split_per_class(samples([1, 10]), ["a", "b"], 0, 0, min_per_class=2,
                             max_per_class=12, existing={0: 5, 1: 8})
    assert result.classes == ["a", "b"] and not result.warnings
    assert per_class(result.splits["train"]) == {0: 1, 1: 4}  # b: 12 - 8 already held
