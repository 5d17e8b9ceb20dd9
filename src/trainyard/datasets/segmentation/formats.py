"""The mask readers, one per mask format (spec_rules.py names the formats and what each needs):
a new format is a reader registered here, its rules there; collect.py only asks this table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainyard.datasets.segmentation.coco import read_coco
from trainyard.datasets.segmentation.folders import read_colour_folders, read_index_folders
from trainyard.datasets.segmentation.masks import Found
from trainyard.datasets.segmentation.voc import read_voc

# (spec, job folder) -> the classes, each given split's candidate pairs and the report lines.
MASK_READERS: dict[str, Callable[[Any, Path], Found]] = {
    "index": read_index_folders, "colors": read_colour_folders, "voc": read_voc, "coco": read_coco}
