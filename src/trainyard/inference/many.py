"""Classify many images as a job: streamed in batches, so memory stays flat for any count.

Images are decoded and resized in a few threads a little ahead of the network; each batch's
rows go straight to results.csv (and their offsets to results.idx, see results.py). Only
fixed-size tallies stay in memory: the confusion matrix, top-k hit counts and, per class, the
`top_n` images with the highest probability for that class (DIGITS's "top N per category").
"""

from __future__ import annotations

import csv
import io
import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from trainyard.core.files import write_json_atomic
from trainyard.core.jobproc import Aborted
from trainyard.core.paths import PathNotAllowed, resolve_inside
from trainyard.datasets.images import ImageError, load_image
from trainyard.datasets.storage import open_split
from trainyard.inference import metrics
from trainyard.inference.classify import prepare_pixels, probabilities, resize_for, top_k
from trainyard.inference.loader import LoadedModel
from trainyard.inference.results import RESULTS_CSV, RESULTS_INDEX, SUMMARY
from trainyard.inference.sources import Item

DECODE_THREADS = min(4, os.cpu_count() or 1)


class TopN:
    """Per class, the ``n`` rows with the highest probability of that class seen so far."""

    def __init__(self, num_classes: int, n: int):
        self.n = n
        self.scores = np.full((num_classes, n), -1.0, np.float32)
        self.rows = np.full((num_classes, n), -1, np.int64)
        self.names: dict[int, str] = {}

    def add(self, probs: np.ndarray, rows: np.ndarray, names: list[str]) -> None:
        """``probs`` (B, classes) of rows ``rows`` named ``names``."""
        if not self.n or not len(rows):
            return
        scores = np.concatenate([self.scores, probs.T], axis=1)
        candidates = np.concatenate([self.rows, np.broadcast_to(rows, (len(self.rows), len(rows)))], axis=1)
        best = np.argsort(-scores, axis=1, kind="stable")[:, :self.n]
        self.scores = np.take_along_axis(scores, best, axis=1)
        self.rows = np.take_along_axis(candidates, best, axis=1)
        self.names.update(zip(rows.tolist(), names))
        kept = set(self.rows.ravel().tolist())
        self.names = {r: name for r, name in self.names.items() if r in kept}

    def result(self, classes: list[str]) -> list[dict]:
        return [{"class": name, "images": [{"row": int(r), "image": self.names[int(r)], "confidence": float(s)}
                                           for r, s in zip(self.rows[c], self.scores[c]) if r >= 0]}
                for c, name in enumerate(classes)]


class Tally:
    """Confusion matrix and top-k hits over the labelled images."""

    def __init__(self, num_classes: int, k: int):
        self.matrix = np.zeros((num_classes, num_classes), np.int64)
        self.top_correct = np.zeros(k, np.int64)
        self.unknown_labels = 0

    def add(self, items: list[Item], top: np.ndarray) -> None:
        labelled = [i for i, item in enumerate(items) if item.label is not None]
        self.unknown_labels += sum(1 for item in items if item.label is None and item.label_text)
        if labelled:
            labels = np.array([items[i].label for i in labelled])
            self.matrix += metrics.confusion_matrix(labels, top[labelled, 0], len(self.matrix))
            self.top_correct += metrics.top_k_correct(labels, top[labelled])


class Loader:
    """Turns items into stored-size pixels (or an error message), checking paths are allowed."""

    def __init__(self, loaded: LoadedModel, roots: Sequence[str], dataset_dir: str | None, split: str | None):
        self.loaded = loaded
        self.roots = [Path(r) for r in roots]
        self.reader = open_split(Path(dataset_dir), split) if dataset_dir and split else None

    def __call__(self, item: Item) -> np.ndarray | str:
        if item.index is not None:
            assert self.reader is not None  # only split sources give indexes, and they give the split
            return self.reader.read(item.index)
        assert item.path is not None  # an item is either a stored image (index) or a file (path)
        try:
            path = resolve_inside(item.path, self.roots) if self.roots else item.path
            return resize_for(self.loaded, load_image(path, self.loaded.preprocess["channels"]))
        except (ImageError, PathNotAllowed) as exc:
            return str(exc)


def _decoded(items: Iterable[Item], load: Loader, ahead: int) -> Iterator[tuple[Item, np.ndarray | str]]:
    """(item, pixels or error) in order, decoding up to ``ahead`` items in advance."""
    with ThreadPoolExecutor(DECODE_THREADS) as pool:
        pending: deque = deque()
        for item in items:
            pending.append((item, pool.submit(load, item)))
            if len(pending) >= ahead:
                first, future = pending.popleft()
                yield first, future.result()
        while pending:
            first, future = pending.popleft()
            yield first, future.result()


def classify_many(loaded: LoadedModel, items: Iterable[Item], job_dir: Path, *, total: int, top: int = 5,
                  top_n: int = 12, batch_size: int = 64, roots: Sequence[str] = (), dataset_dir: str | None = None,
                  split: str | None = None, progress: Callable[[int, int], None] = lambda d, t: None,
                  should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Classify ``items`` (``total`` of them), writing results.csv; return and write the summary."""
    classes, k = loaded.classes, max(1, min(top, len(loaded.classes)))
    tally, best = Tally(len(classes), k), TopN(len(classes), top_n)
    load = Loader(loaded, list(roots), dataset_dir, split)
    done = errors = 0
    with open(job_dir / RESULTS_CSV, "wb") as out, open(job_dir / RESULTS_INDEX, "wb") as index:
        header = ["row", "image", "label"] + [f"{n}_{j + 1}" for j in range(k) for n in ("prediction", "confidence")]
        out.write(_csv_lines([header + ["error"]]))
        stream = _decoded(items, load, 2 * batch_size)
        while batch := list(itertools.islice(stream, batch_size)):
            if should_stop():
                raise Aborted()
            errors += _classify_batch(loaded, batch, done, k, out, index, tally, best)
            done += len(batch)
            progress(done, total)
    summary = {"images": done, "classified": done - errors, "errors": errors, "classes": classes, "top": k,
               "top_n": best.result(classes), "unknown_labels": tally.unknown_labels}
    summary.update(_accuracy(tally, classes))
    write_json_atomic(job_dir / SUMMARY, summary)
    return summary


def _classify_batch(loaded, batch, first_row, k, out, index, tally: Tally, best: TopN) -> int:
    """Classify one batch, write its rows and fold it into the tallies; return its error count."""
    good = [i for i, (_, pixels) in enumerate(batch) if not isinstance(pixels, str)]
    top = np.zeros((0, k), np.int64)
    conf = np.zeros((0, k), np.float32)
    if good:
        prepared = prepare_pixels(loaded, np.stack([batch[i][1] for i in good]))
        probs = probabilities(loaded, prepared.inputs)
        top, conf = top_k(probs, k)
        items = [batch[i][0] for i in good]
        tally.add(items, top)
        best.add(probs, np.array(good) + first_row, [item.name for item in items])
    _write_rows(loaded.classes, batch, good, top, conf, first_row, k, out, index)
    return len(batch) - len(good)


def _write_rows(classes, batch, good, top, conf, first_row, k, out, index) -> None:
    """Append the batch's CSV rows, and each row's byte offset to the index."""
    at = dict(zip(good, range(len(good))))
    offsets, position = [], out.tell()
    lines = []
    for i, (item, pixels) in enumerate(batch):
        row = [first_row + i, item.name, item.label_text]
        if i in at:
            j = at[i]
            row += [v for c, p in zip(top[j], conf[j]) for v in (classes[c], f"{p:.6f}")] + [""]
        else:
            row += [""] * (2 * k) + [pixels]
        line = _csv_lines([row])
        offsets.append(position)
        position += len(line)
        lines.append(line)
    out.write(b"".join(lines))
    out.flush()
    index.write(np.asarray(offsets, dtype="<i8").tobytes())  # after the rows: a reader never sees a row half written
    index.flush()


def _csv_lines(rows: list[list]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode("utf-8")


def _accuracy(tally: Tally, classes: list[str]) -> dict:
    """Accuracy, confusion and per-class figures when some images had labels."""
    labelled = int(tally.matrix.sum())
    if not labelled:
        return {"labelled": 0, "accuracy": None, "top5_accuracy": None}
    doc = metrics.summary(tally.matrix, classes, tally.top_correct)
    doc["labelled"] = doc.pop("images")
    return doc
