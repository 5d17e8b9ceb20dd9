"""The dataset spec's rules for a multi-label dataset (fields on datasets/spec.py's DatasetSpec):
CSV lists (``train_list``, optional ``val_list`` / ``test_list``) whose rows name the labels, so
no labels file, class folders, archives, box labels or append."""

from __future__ import annotations

from typing import Any

from trainyard.datasets.resize_plans import RESIZE

_NOT_FOR_MULTILABEL = ("train_folder", "val_folder", "test_folder", "labels_file", "train_archive",
                       "val_archive", "parent_dir", "train_labels", "val_labels", "test_labels",
                       "labels_format", "classes", "mask_colors")


def check_multilabel(spec: Any) -> None:
    """Raise ValueError (pydantic reports it) for a multi-label spec that cannot be built."""
    if spec.train_list is None:
        raise ValueError("a multilabel dataset needs train_list: a CSV of path,label;label rows")
    given = [name for name in _NOT_FOR_MULTILABEL if getattr(spec, name) is not None]
    if given:
        raise ValueError(f"{', '.join(given)} cannot be used for a multilabel dataset "
                         "(give CSV lists: train_list, val_list, test_list)")
    RESIZE.get(spec.resize)  # an unknown mode: "did you mean ...", listing the valid ones
