"""Reading an inference job's outputs back (for the API, the pages and the CLI). No torch.

A classify-many job writes, in its folder:

- ``results.csv``: a header, then one row per image: ``row, image, label, prediction_1,
  confidence_1, ... prediction_k, confidence_k, error``. ``label`` is empty without one.
- ``results.idx``: int64 little-endian byte offsets of each row in results.csv, appended as
  rows are written, so any page of a 100,000-image result is read without scanning the file.
- ``summary.json``: counts, and with labels accuracy, confusion and per-class figures; top-N
  images per class; ``image_base`` (where relative image names resolve).

A classify-many job of a detection model (detect-many, detection/many.py) writes the same files,
its rows ``row, image, box_count, boxes, error`` (``boxes`` a JSON list of ``{label, score, box}``).

An evaluate job writes ``evaluation.json`` (see evaluate.py).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable
from pathlib import Path

from trainyard.core import jobfiles
from trainyard.core.paths import JobFolder
from trainyard.core.vocabulary import DEFAULT_TASK

RESULTS_CSV = "results.csv"
RESULTS_INDEX = "results.idx"
SUMMARY = "summary.json"
SOURCE = "source.json"  # written first: {source, total, image_base}
EVALUATION = "evaluation.json"
IMAGES_DIR = "images"  # where an uploaded archive is unpacked
OFFSET_BYTES = 8


def row_count(job_dir: str | os.PathLike) -> int:
    """Rows written so far (grows while the job runs). ``job_dir``, here and below: the job's
    folder (its work folder holds the results, core/paths.py), read as every file a job writes
    (core/jobfiles.py: no link, no FIFO, bounded)."""
    size = _size(_work(job_dir), RESULTS_INDEX)
    return 0 if size is None else size // OFFSET_BYTES


def _work(job_dir: str | os.PathLike) -> Path:
    return JobFolder(job_dir).work


def _size(work: Path, name: str) -> int | None:
    try:
        fd = jobfiles.open_beneath(work, name)
    except (FileNotFoundError, jobfiles.UnsafeFile):
        return None
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _offsets(work: Path, start: int, stop: int) -> list[int]:
    data = jobfiles.read_bytes(work, RESULTS_INDEX, (stop - start) * OFFSET_BYTES, offset=start * OFFSET_BYTES)
    return [int.from_bytes(data[i:i + OFFSET_BYTES], "little") for i in range(0, len(data), OFFSET_BYTES)]


def parse_row(fields: list[str]) -> dict:
    """A CSV row as the API's JSON: ``{row, image, label, predictions, error}``."""
    row, image, label, *rest = fields
    error = rest[-1] if rest else ""
    pairs = rest[:-1]
    predictions = [[pairs[i], float(pairs[i + 1])] for i in range(0, len(pairs) - 1, 2) if pairs[i]]
    return {"row": int(row), "image": image, "label": label or None, "predictions": predictions,
            "error": error or None}


def parse_detection_row(fields: list[str]) -> dict:
    """A detect-many CSV row as the API's JSON: ``{row, image, boxes: [{label, score, box}], error}``."""
    row, image, _, boxes, error = fields
    return {"row": int(row), "image": image, "boxes": json.loads(boxes) if boxes else [], "error": error or None}


def parse_segmentation_row(fields: list[str]) -> dict:
    """A segment-many CSV row as the API's JSON: ``{row, image, mask, areas: {class: share}, error}``."""
    row, image, mask, areas, error = fields
    return {"row": int(row), "image": image, "mask": mask or None, "areas": json.loads(areas) if areas else {},
            "error": error or None}


# How a job's rows read back, by the task of its model (core/tasks.py).
ROW_PARSERS: dict[str, Callable[[list[str]], dict]] = {"classification": parse_row, "detection": parse_detection_row,
                                                       "multilabel": parse_row, "segmentation": parse_segmentation_row}


def row_parser(task: str | None) -> Callable[[list[str]], dict]:
    """How the rows of a job of ``task`` (its spec's: the model's) read back."""
    return ROW_PARSERS[task or DEFAULT_TASK]


def read_rows(job_dir: str | os.PathLike, offset: int, limit: int,
              parse: Callable[[list[str]], dict] = parse_row) -> list[dict]:
    """Rows ``offset`` .. ``offset + limit - 1`` (fewer at the end)."""
    work = _work(job_dir)
    stop = min(row_count(work), offset + limit)
    if offset >= stop:
        return []
    starts = _offsets(work, offset, stop)
    end = _end(work, stop)
    text = jobfiles.read_bytes(work, RESULTS_CSV, max(end - starts[0], 0), offset=starts[0]).decode("utf-8")
    return [parse(fields) for fields in csv.reader(io.StringIO(text)) if fields]


def read_row(job_dir: str | os.PathLike, row: int, parse: Callable[[list[str]], dict] = parse_row) -> dict | None:
    rows = read_rows(job_dir, row, 1, parse)
    return rows[0] if rows else None


def _end(work: Path, stop: int) -> int:
    """Byte offset where row ``stop`` begins (the end of the file for the last row)."""
    if stop < row_count(work):
        return _offsets(work, stop, stop + 1)[0]
    return _size(work, RESULTS_CSV) or 0


def _document(job_dir: str | os.PathLike, name: str) -> dict | None:
    try:
        return jobfiles.read_json(_work(job_dir), name)
    except (FileNotFoundError, jobfiles.UnsafeFile):
        return None


def read_summary(job_dir: str | os.PathLike) -> dict | None:
    """A classify-many job's summary.json, or None before it is written."""
    return _document(job_dir, SUMMARY)


def read_source(job_dir: str | os.PathLike) -> dict | None:
    """What a classify-many job reads (written when it starts), or None before that."""
    return _document(job_dir, SOURCE)


def read_evaluation(job_dir: str | os.PathLike) -> dict | None:
    return _document(job_dir, EVALUATION)
