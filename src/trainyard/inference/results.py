"""Reading an inference job's outputs back (for the API, the pages and the CLI). No torch.

A classify-many job writes, in its folder:

- ``results.csv``: a header, then one row per image: ``row, image, label, prediction_1,
  confidence_1, ... prediction_k, confidence_k, error``. ``label`` is empty without one.
- ``results.idx``: int64 little-endian byte offsets of each row in results.csv, appended as
  rows are written, so any page of a 100,000-image result is read without scanning the file.
- ``summary.json``: counts, and with labels accuracy, confusion and per-class figures; top-N
  images per class; ``image_base`` (where relative image names resolve).

An evaluate job writes ``evaluation.json`` (see evaluate.py).
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from trainyard.core import jobfiles
from trainyard.core.files import read_json
from trainyard.core.paths import JobFolder

RESULTS_CSV = "results.csv"
RESULTS_INDEX = "results.idx"
SUMMARY = "summary.json"
SOURCE = "source.json"  # written first: {source, total, image_base}
EVALUATION = "evaluation.json"
IMAGES_DIR = "images"  # where an uploaded archive is unpacked
OFFSET_BYTES = 8


def row_count(job_dir: str | os.PathLike) -> int:
    """Rows written so far (grows while the job runs)."""
    try:
        return (Path(job_dir) / RESULTS_INDEX).stat().st_size // OFFSET_BYTES
    except FileNotFoundError:
        return 0


def _offsets(job_dir: Path, start: int, stop: int) -> list[int]:
    with open(job_dir / RESULTS_INDEX, "rb") as f:
        f.seek(start * OFFSET_BYTES)
        data = f.read((stop - start) * OFFSET_BYTES)
    return [int.from_bytes(data[i:i + OFFSET_BYTES], "little") for i in range(0, len(data), OFFSET_BYTES)]


def parse_row(fields: list[str]) -> dict:
    """A CSV row as the API's JSON: ``{row, image, label, predictions, error}``."""
    row, image, label, *rest = fields
    error = rest[-1] if rest else ""
    pairs = rest[:-1]
    predictions = [[pairs[i], float(pairs[i + 1])] for i in range(0, len(pairs) - 1, 2) if pairs[i]]
    return {"row": int(row), "image": image, "label": label or None, "predictions": predictions,
            "error": error or None}


def read_rows(job_dir: str | os.PathLike, offset: int, limit: int) -> list[dict]:
    """Rows ``offset`` .. ``offset + limit - 1`` (fewer at the end)."""
    job_dir = Path(job_dir)
    stop = min(row_count(job_dir), offset + limit)
    if offset >= stop:
        return []
    starts = _offsets(job_dir, offset, stop)
    with open(job_dir / RESULTS_CSV, "rb") as f:
        f.seek(starts[0])
        text = f.read(_end(job_dir, stop) - starts[0]).decode("utf-8")
    return [parse_row(fields) for fields in csv.reader(io.StringIO(text)) if fields]


def read_row(job_dir: str | os.PathLike, row: int) -> dict | None:
    rows = read_rows(job_dir, row, 1)
    return rows[0] if rows else None


def _end(job_dir: Path, stop: int) -> int:
    """Byte offset where row ``stop`` begins (the end of the file for the last row)."""
    if stop < row_count(job_dir):
        return _offsets(job_dir, stop, stop + 1)[0]
    return (job_dir / RESULTS_CSV).stat().st_size


def read_summary(job_dir: str | os.PathLike) -> dict | None:
    """A classify-many job's summary.json, or None before it is written."""
    try:
        return read_json(Path(job_dir) / SUMMARY)
    except FileNotFoundError:
        return None


def read_source(job_dir: str | os.PathLike) -> dict | None:
    """What a classify-many job reads (written when it starts), or None before that."""
    try:
        return read_json(Path(job_dir) / SOURCE)
    except FileNotFoundError:
        return None


def read_evaluation(job_dir: str | os.PathLike) -> dict | None:
    try:
        return read_json(Path(job_dir) / EVALUATION)
    except FileNotFoundError:
        return None


def describe_inference(job: object, folder: JobFolder) -> dict:
    """What a classify-many or evaluate job adds to its JSON (the job registry's ``describe``)."""
    # ``job`` is the jobs store's row (jobs/ sits above inference/, so not named here); unused
    from trainyard.inference.spec import stored_spec

    try:
        spec = stored_spec(jobfiles.read_json(folder.path, "spec.json"))
    except OSError:  # none, or a link or FIFO in its place (core/jobfiles.py)
        return {"model": None, "epoch": None, "task": None, "split": None, "rows": row_count(folder.path)}
    doc = {"model": spec.model_id, "epoch": spec.epoch, "task": spec.kind, "split": spec.split,
           "rows": row_count(folder.path)}
    result = read_evaluation(folder.path) if spec.kind == "evaluate" else read_summary(folder.path)
    if result:
        doc["accuracy"] = result.get("accuracy")
        doc["top5_accuracy"] = result.get("top5_accuracy")
        doc["images"] = result.get("images")
    return doc
