"""The dataset spec's rules for a segmentation dataset (the fields live on datasets/spec.py's
DatasetSpec): an image folder with a mask folder per split, the class names from the command
line, a squash resize (masks resized with nearest neighbour, kept aligned), no lists, archives or
append. Validation without numpy or Pillow.
"""

from __future__ import annotations

from typing import Any

SEGMENTATION_RESIZE = ("squash",)
_NOT_FOR_SEGMENTATION = ("train_list", "val_list", "test_list", "labels_file", "train_archive", "val_archive",
                         "parent_dir", "labels_format")
MAX_CLASSES = 255  # index 255 means "ignore" in a mask


def check_segmentation(spec: Any) -> None:
    """Raise ValueError (pydantic reports it) for a segmentation spec that cannot be built."""
    if spec.train_folder is None or spec.train_labels is None:
        raise ValueError("a segmentation dataset needs train_folder (images) and train_labels (masks)")
    given = [name for name in _NOT_FOR_SEGMENTATION if getattr(spec, name) is not None]
    if given:
        raise ValueError(f"{', '.join(given)} cannot be used for a segmentation dataset "
                         "(give image folders with train_labels / val_labels mask folders)")
    for split in ("val", "test"):
        if (getattr(spec, f"{split}_folder") is None) != (getattr(spec, f"{split}_labels") is None):
            raise ValueError(f"give {split}_folder and {split}_labels together")
    if spec.resize not in SEGMENTATION_RESIZE:
        raise ValueError(f"resize {spec.resize!r} is not a segmentation resize; valid: "
                         f"{', '.join(SEGMENTATION_RESIZE)}")
    if not spec.classes or len(spec.classes) < 2:
        raise ValueError("a segmentation dataset needs its class names, mask index order, at least two "
                         "(--classes background,cat,dog)")
    names = [c.strip() for c in spec.classes]
    if any(not n or "=" in n for n in names) or len(set(names)) != len(names):
        raise ValueError("segmentation classes must be distinct, non-empty names (no NAME=NEW)")
    if len(names) > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} segmentation classes (mask index 255 means ignore)")
    if spec.val_percent + spec.test_percent >= 100:
        raise ValueError(f"val_percent + test_percent must be under 100, "
                         f"got {spec.val_percent:g} + {spec.test_percent:g}")
