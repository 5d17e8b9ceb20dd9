"""Class folders, DIGITS lists and labels files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from dataset_helpers import make_class_tree, save_image

from trainyard.datasets.sources import (
    Sample,
    parse_list,
    read_labels,
    scan_class_folders,
    scan_with_classes,
)


def tiny(path: Path) -> Path:
    return save_image(path, np.zeros((2, 2, 3), np.uint8))


def test_class_folders_sorted_recursive_and_filtered(tmp_path: Path):
    root = tmp_path / "train"
    tiny(root / "zebra" / "a.png")
    tiny(root / "apple" / "deep" / "er" / "b.JPG")  # upper-case extension, nested
    tiny(root / "apple" / "c.png")
    (root / "apple" / "notes.txt").write_text("not an image")
    tiny(root / "apple" / ".hidden.png")
    tiny(root / ".git" / "x.png")  # hidden folder: not a class
    (root / "README.md").write_text("a file at the top is not a class")
    classes, samples = scan_class_folders(root)
    assert classes == ["apple", "zebra"]
    assert sorted((s.path.relative_to(root).as_posix(), s.label) for s in samples) == [
        ("apple/c.png", 0), ("apple/deep/er/b.JPG", 0), ("zebra/a.png", 1),
    ]


def test_links_outside_root_are_not_followed(tmp_path: Path):
    outside = tmp_path / "secret"
    tiny(outside / "private.png")
    root = tmp_path / "train"
    tiny(root / "cat" / "1.png")
    tiny(root / "dog" / "1.png")
    os.symlink(outside, root / "cat" / "linked_dir")
    os.symlink(outside / "private.png", root / "dog" / "linked.png")
    os.symlink(outside, root / "bird")  # a whole class folder pointing outside
    os.symlink(root / "cat" / "1.png", root / "dog" / "inside.png")  # stays inside: followed
    skipped = []
    classes, samples = scan_class_folders(root, skipped)
    assert classes == ["cat", "dog"]
    names = sorted(s.path.name for s in samples)
    assert names == ["1.png", "1.png", "inside.png"]
    assert sorted(Path(s.path).name for s in skipped) == ["bird", "linked.png", "linked_dir"]
    assert all("outside" in s.reason for s in skipped)


def test_link_loop_ends(tmp_path: Path):
    root = tmp_path / "train"
    tiny(root / "cat" / "1.png")
    os.symlink(root / "cat", root / "cat" / "again")
    _, samples = scan_class_folders(root)
    assert [s.path.name for s in samples] == ["1.png"]


def test_missing_root(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        scan_class_folders(tmp_path / "nope")


def test_val_folder_uses_train_classes(tmp_path: Path):
    make_class_tree(tmp_path / "val", {"dog": 2, "cat": 1, "emu": 1})
    skipped = []
    samples = scan_with_classes(tmp_path / "val", ["cat", "dog"], skipped)
    assert sorted(s.label for s in samples) == [0, 1, 1]
    assert len(skipped) == 1 and "'emu' is not in the training set" in skipped[0].reason


def test_read_labels(tmp_path: Path):
    (tmp_path / "labels.txt").write_text("cat\n\n  dog  \nbig bird\n")
    assert read_labels(tmp_path / "labels.txt") == ["cat", "dog", "big bird"]
    (tmp_path / "one.txt").write_text("cat\n\n")
    with pytest.raises(ValueError, match="at least two"):
        read_labels(tmp_path / "one.txt")
    (tmp_path / "dup.txt").write_text("cat\ndog\ncat\n")
    with pytest.raises(ValueError, match="repeats"):
        read_labels(tmp_path / "dup.txt")


def test_parse_list(tmp_path: Path):
    lst = tmp_path / "lists" / "train.txt"
    lst.parent.mkdir()
    lst.write_text(
        "a.png 0\n"
        "my photos/b c.png  1\n"  # spaces in the path
        "\n"
        "/abs/d.png 1\n"
        "nolabel\n"
        "e.png one\n"
        "f.png 5\n"
    )
    samples, skipped = parse_list(lst, ["cat", "dog"])
    assert samples == [
        Sample(lst.parent / "a.png", 0),
        Sample(lst.parent / "my photos" / "b c.png", 1),
        Sample(Path("/abs/d.png"), 1),
    ]
    reasons = [s.reason for s in skipped]
    assert reasons[0].startswith("line 5:")
    assert reasons[1].startswith("line 6:") and "not a number" in reasons[1]
    assert reasons[2].startswith("line 7:") and "outside 0..1" in reasons[2]


def test_parse_list_image_root(tmp_path: Path):
    (tmp_path / "l.txt").write_text("x/a.png 1\n")
    samples, _ = parse_list(tmp_path / "l.txt", ["a", "b"], image_root=tmp_path / "imgs")
    assert samples == [Sample(tmp_path / "imgs" / "x" / "a.png", 1)]
