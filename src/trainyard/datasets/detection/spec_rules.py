"""The dataset spec's rules for a detection dataset (the fields live on datasets/spec.py's
DatasetSpec): image folders with box labels, a pad or squash resize (pad by default), and
no class folders, lists, archives or append. A test split comes from a folder with its labels
or ``test_percent`` of the training images, as classification's does.
"""

from __future__ import annotations

from typing import Any

from trainyard.core.tasks import known_task, task_traits
from trainyard.datasets.detection.labels import parse_classes

# Named here, not in geometry.py, so validating a spec does not import numpy and Pillow.
DETECTION_RESIZE = ("pad", "squash")
DEFAULT_RESIZE = "pad"
DETECTION_FIELDS = ("train_labels", "val_labels", "test_labels", "labels_format", "classes")
_NOT_FOR_DETECTION = ("train_list", "val_list", "test_list", "labels_file", "train_archive", "val_archive",
                      "parent_dir", "mask_colors")


def default_resize(data: object) -> object:
    """A detection spec without a resize gets pad (letterbox); classification keeps its default."""
    if isinstance(data, dict) and task_traits(known_task(data.get("task"))).boxes and data.get("resize") is None:
        return {**data, "resize": DEFAULT_RESIZE}
    return data


def check_detection(spec: Any) -> None:
    """Raise ValueError (pydantic reports it) for a detection spec that cannot be built."""
    if spec.train_folder is None or spec.train_labels is None:
        raise ValueError("a detection dataset needs train_folder (images) and train_labels")
    given = [name for name in _NOT_FOR_DETECTION if getattr(spec, name) is not None]
    if given:
        raise ValueError(f"{', '.join(given)} cannot be used for a detection dataset "
                         "(give image folders with train_labels / val_labels)")
    for split in ("val", "test"):
        if (getattr(spec, f"{split}_folder") is None) != (getattr(spec, f"{split}_labels") is None):
            raise ValueError(f"give {split}_folder and {split}_labels together")
    if spec.resize not in DETECTION_RESIZE:
        raise ValueError(f"resize {spec.resize!r} is not a detection resize; valid: {', '.join(DETECTION_RESIZE)}")
    if spec.classes is not None:
        parse_classes(spec.classes)  # InvalidInput is a ValueError: the entry is named
