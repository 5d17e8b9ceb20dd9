"""Classify many images as a job: streamed in batches, so memory stays flat for any count
(detect-many, inference/detection/many.py, reads and writes through the same `image_batches`
and `ResultRows`).

Image files are decoded and resized a window ahead of the network by the dataset build's
decode pipeline (datasets/pipeline.py: a process per core for 100 images or more, forked
before ONNX Runtime starts its threads; in this process for fewer). Each batch's rows go
straight to results.csv (and their offsets to results.idx, see results.py). Only fixed-size
tallies stay in memory: the confusion matrix, top-k hit counts and, per class, the `top_n`
images with the highest probability for that class (DIGITS's "top N per category").
"""

from __future__ import annotations

import csv
import io
import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import cast

import numpy as np

from trainyard.artifact.inputs import INFERENCE_NOISE_SEED
from trainyard.core.files import write_json_atomic
from trainyard.core.jobproc import Aborted
from trainyard.core.paths import PathNotAllowed, inside_roots, resolve_roots
from trainyard.datasets.decode_worker import Geometry, Outcome
from trainyard.datasets.leftovers import new_shm_name
from trainyard.datasets.pipeline import DecodePipeline
from trainyard.datasets.storage import open_split
from trainyard.inference import metrics
from trainyard.inference.classify import prepare_pixels, probabilities, top_k
from trainyard.inference.loader import LoadedModel
from trainyard.inference.results import RESULTS_CSV, RESULTS_INDEX, SUMMARY
from trainyard.inference.sources import Item


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


class Sources:
    """Where each item's pixels come from: a stored image of a dataset split (read here), or an
    image file, its path checked against the data roots here and decoded by the pipeline."""

    def __init__(self, roots: Sequence[str], dataset_dir: str | None, split: str | None):
        self.roots = resolve_roots(roots)  # once: resolving them for every image halved the images/s
        self.reader = open_split(Path(dataset_dir), split) if dataset_dir and split else None

    def __call__(self, item: Item) -> np.ndarray | Path | str:
        """The stored pixels, the file to decode, or why the item cannot be classified."""
        if item.index is not None:
            assert self.reader is not None  # only split sources give indexes, and they give the split
            return self.reader.read(item.index)
        assert item.path is not None  # an item is either a stored image (index) or a file (path)
        try:
            return inside_roots(item.path, self.roots) if self.roots else Path(item.path)
        except PathNotAllowed as exc:
            return str(exc)


def _pixels(items: Iterable[Item], sources: Sources, pipeline: DecodePipeline
            ) -> Iterator[tuple[Item, np.ndarray | str]]:
    """(item, stored-size pixels or an error) in order. Files go to the decode pipeline, which
    reads its input a window ahead; ``order`` keeps every item's place until its turn."""
    order: deque[tuple[Item, np.ndarray | Path | str]] = deque()

    def files() -> Iterator[tuple[str, tuple[int, ...]]]:
        for item in items:
            source = sources(item)
            order.append((item, source))
            if isinstance(source, Path):
                yield str(source), (INFERENCE_NOISE_SEED,)  # as inputs.resize_for_input draws it

    decoded: deque[Outcome] = deque()
    outcomes = pipeline.run(files())
    finished = False
    while order or not finished:
        if order and not isinstance(order[0][1], Path):
            item, source = order.popleft()
            yield item, cast("np.ndarray | str", source)
        elif order and decoded:
            pixels, _, reason = decoded.popleft()
            # A copy: the pipeline's pixels may be a view into its ring, reused a window later.
            yield order.popleft()[0], np.array(pixels) if pixels is not None else reason or "not decoded"
        else:
            outcome = next(outcomes, None)
            finished = outcome is None
            if outcome is not None:
                decoded.append(outcome)


def image_batches(geometry: Geometry, items: Iterable[Item], job_dir: Path, *, total: int, batch_size: int,
                  roots: Sequence[str] = (), dataset_dir: str | None = None, split: str | None = None,
                  should_stop: Callable[[], bool] = lambda: False
                  ) -> Iterator[list[tuple[Item, np.ndarray | str]]]:
    """``items`` as batches of (item, stored-size pixels fitted by ``geometry``, or why not),
    in order; Aborted between batches once ``should_stop``. Classify-many's and detect-many's feed."""
    sources = Sources(list(roots), dataset_dir, split)
    with DecodePipeline(geometry, os.cpu_count() or 1, shm_name=new_shm_name(job_dir), count=total) as pipeline:
        # A split's images are stored pixels, read one by one: only files go through the pipeline
        # (whose input, read a window ahead, would otherwise be the whole split at once).
        stream = (((item, cast("np.ndarray | str", sources(item))) for item in items) if split
                  else _pixels(items, sources, pipeline))
        while batch := list(itertools.islice(stream, batch_size)):
            if should_stop():
                raise Aborted()
            yield batch


class ResultRows:
    """A job's results.csv and results.idx (results.py), appended a batch of rows at a time."""

    def __init__(self, job_dir: Path, header: list[str]):
        self.out = open(job_dir / RESULTS_CSV, "wb")
        self.index = open(job_dir / RESULTS_INDEX, "wb")
        self.out.write(_csv_lines([header]))

    def append(self, rows: list[list]) -> None:
        """Append ``rows``, and each row's byte offset to the index."""
        offsets, position, lines = [], self.out.tell(), []
        for row in rows:
            line = _csv_lines([row])
            offsets.append(position)
            position += len(line)
            lines.append(line)
        self.out.write(b"".join(lines))
        self.out.flush()
        # after the rows: a reader never sees a row half written
        self.index.write(np.asarray(offsets, dtype="<i8").tobytes())
        self.index.flush()

    def __enter__(self) -> ResultRows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.out.close()
        self.index.close()


def classify_many(loaded: LoadedModel, items: Iterable[Item], job_dir: Path, *, total: int, top: int = 5,
                  top_n: int = 12, batch_size: int = 64, roots: Sequence[str] = (), dataset_dir: str | None = None,
                  split: str | None = None, progress: Callable[[int, int], None] = lambda d, t: None,
                  should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Classify ``items`` (``total`` of them), writing results.csv; return and write the summary."""
    classes, k = loaded.classes, max(1, min(top, len(loaded.classes)))
    tally, best = Tally(len(classes), k), TopN(len(classes), top_n)
    p = loaded.preprocess
    geometry = Geometry(p.width, p.height, p.channels, p.resize, encoding="none")
    done = errors = 0
    header = ["row", "image", "label"] + [f"{n}_{j + 1}" for j in range(k) for n in ("prediction", "confidence")]
    with ResultRows(job_dir, header + ["error"]) as out:
        for batch in image_batches(geometry, items, job_dir, total=total, batch_size=batch_size, roots=roots,
                                   dataset_dir=dataset_dir, split=split, should_stop=should_stop):
            errors += _classify_batch(loaded, batch, done, k, out, tally, best)
            done += len(batch)
            progress(done, total)
    summary = {"images": done, "classified": done - errors, "errors": errors, "classes": classes, "top": k,
               "top_n": best.result(classes), "unknown_labels": tally.unknown_labels}
    summary.update(_accuracy(tally, classes))
    write_json_atomic(job_dir / SUMMARY, summary)
    return summary


def _classify_batch(loaded: LoadedModel, batch: list[tuple[Item, np.ndarray | str]], first_row: int, k: int,
                    out: ResultRows, tally: Tally, best: TopN) -> int:
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
    out.append(_rows(loaded.classes, batch, good, top, conf, first_row, k))
    return len(batch) - len(good)


def _rows(classes: list[str], batch: list[tuple[Item, np.ndarray | str]], good: list[int], top: np.ndarray,
          conf: np.ndarray, first_row: int, k: int) -> list[list]:
    """The batch's CSV rows: row, image, label, k (prediction, confidence) pairs, error."""
    at = dict(zip(good, range(len(good))))
    rows = []
    for i, (item, pixels) in enumerate(batch):
        row = [first_row + i, item.name, item.label_text]
        if i in at:
            j = at[i]
            row += [v for c, p in zip(top[j], conf[j]) for v in (classes[c], f"{p:.6f}")] + [""]
        else:
            row += [""] * (2 * k) + [pixels]
        rows.append(row)
    return rows


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
