"""Colour masks: RGB PNGs whose colours map to classes by a table (``--mask-colors FILE``).

The table is a text file of ``R,G,B name`` lines (``128,0,0 aeroplane``; blank lines and lines
starting with ``#`` are skipped), or a JSON object ``{"name": [r, g, b], ...}``. The classes are
the table's names in the order they first appear, unless ``--classes`` gives the order (then the
names must be the same). Several colours may name one class; the name ``ignore`` maps its
colours to 255 (VOC's (224, 224, 192) border, say), which is no class. A mask pixel of a colour
the table does not hold makes its file a report line, and the pair is left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainyard.datasets.collect import DatasetError
from trainyard.datasets.images import ImageError
from trainyard.datasets.segmentation.masks import IGNORE, open_png
from trainyard.datasets.segmentation.spec_rules import check_class_names

IGNORE_NAME = "ignore"
MAX_TABLE_BYTES = 1 << 20  # a table names at most 255 classes: a bigger file is not a table
LISTED_COLOURS = 3  # unknown colours named in a report line; the rest counted
_LINE = re.compile(r"\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s+(\S.*?)\s*")


@dataclass(frozen=True)
class ColourTable:
    """The classes in index order and each packed colour's (``r << 16 | g << 8 | b``) index."""

    classes: list[str]
    indices: dict[int, int]

    def to_indices(self, rgb: np.ndarray) -> np.ndarray:
        """(h, w) uint8 indices of an (h, w, 3) uint8 mask; ImageError naming unknown colours."""
        packed = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
        colours, inverse, counts = np.unique(packed, return_inverse=True, return_counts=True)
        unknown = [(int(c), int(n)) for c, n in zip(colours, counts, strict=True) if int(c) not in self.indices]
        if unknown:
            unknown.sort(key=lambda cn: -cn[1])  # the commonest first: most likely a missing table line
            named = ", ".join(f"unknown colour {_rgb(c)} at {n} pixels" for c, n in unknown[:LISTED_COLOURS])
            more = f" and {len(unknown) - LISTED_COLOURS} more colours" if len(unknown) > LISTED_COLOURS else ""
            raise ImageError(f"{named}{more} (not in the colour table)")
        lookup = np.array([self.indices[int(c)] for c in colours], np.uint8)
        return lookup[inverse.reshape(packed.shape)]


def _rgb(packed: int) -> str:
    return f"({packed >> 16},{(packed >> 8) & 255},{packed & 255})"


@dataclass(frozen=True)
class ColourMask:
    """An RGB PNG read through a colour table."""

    path: Path
    table: ColourTable

    @property
    def name(self) -> str:
        return self.path.name

    def read(self) -> np.ndarray:
        with open_png(self.path) as img:
            try:
                rgb = np.asarray(img.convert("RGB"), np.uint8)  # a palette or RGBA mask by its colours
            except (OSError, SyntaxError, ValueError, EOFError) as e:
                raise ImageError(f"cannot read mask: {e}") from None
        return self.table.to_indices(rgb)


def read_colour_table(path: Path, given: list[str] | None) -> ColourTable:
    """The table of ``path``, its classes in ``given``'s order when given; DatasetError saying
    what is wrong (a bad table is no per-file matter: no mask could be read without it)."""
    if not path.is_file():
        raise DatasetError(f"colour table not found: {path}")
    if path.stat().st_size > MAX_TABLE_BYTES:
        raise DatasetError(f"colour table {path} is over {MAX_TABLE_BYTES >> 20} MB")
    text = path.read_text(encoding="utf-8", errors="replace")
    entries = _json_entries(text, path) if text.lstrip().startswith("{") else _line_entries(text, path)
    named = list(dict.fromkeys(name for name, _ in entries if name != IGNORE_NAME))
    classes = named if given is None else given
    if given is not None and set(named) != set(given):
        raise DatasetError(f"the colour table's classes ({', '.join(named)}) are not those of --classes "
                           f"({', '.join(given)}): name the same classes in both")
    try:
        check_class_names(classes)
    except ValueError as e:
        raise DatasetError(f"colour table {path}: {e}") from None
    order = {name: i for i, name in enumerate(classes)} | {IGNORE_NAME: IGNORE}
    indices: dict[int, int] = {}
    for name, colour in entries:
        if indices.setdefault(colour, order[name]) != order[name]:
            raise DatasetError(f"colour table {path}: colour {_rgb(colour)} is given to two classes")
    return ColourTable(classes, indices)


def _pack(values: object, where: str) -> int:
    if (not isinstance(values, list | tuple) or len(values) != 3
            or not all(type(v) is int and 0 <= v <= 255 for v in values)):
        raise DatasetError(f"{where}: a colour is three whole numbers 0..255, got {values!r}"[:300])
    r, g, b = values
    return r << 16 | g << 8 | b


def _line_entries(text: str, path: Path) -> list[tuple[str, int]]:
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise DatasetError(f"colour table {path} line {number}: expected 'R,G,B name' "
                               f"(e.g. 128,0,0 aeroplane), got {line[:80]!r}")
        entries.append((match.group(4), _pack([int(match.group(i)) for i in (1, 2, 3)], f"{path} line {number}")))
    return entries


def _json_entries(text: str, path: Path) -> list[tuple[str, int]]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise DatasetError(f"colour table {path} is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise DatasetError(f"colour table {path}: expected a JSON object {{name: [r, g, b]}}")
    return [(str(name), _pack(colour, f"{path} class {name!r}")) for name, colour in doc.items()]
