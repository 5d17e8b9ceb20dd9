"""Classify-many: sources, rows on disk, accuracy against a hand count, top-N, flat memory."""

from __future__ import annotations

import csv
import tracemalloc
from pathlib import Path

import pytest

from tests.trained_model import colour_image
from trainyard.core.jobproc import Aborted
from trainyard.inference import results
from trainyard.inference.loader import load_model, model_checkpoint
from trainyard.inference.many import classify_many
from trainyard.inference.sources import count_folder, count_list, folder_items, list_items, parse_line

CLASSES = ["dark", "light", "red"]


@pytest.fixture(scope="module")
def loaded(trained):
    return load_model(model_checkpoint(trained.ctx.manager.folder(trained.model_id).path)[1])


@pytest.fixture(scope="module")
def pictures(tmp_path_factory) -> Path:
    """Four fresh images per class in class folders, a broken file and a text file."""
    root = tmp_path_factory.mktemp("pictures")
    for name in CLASSES:
        (root / name).mkdir()
        for i in range(4):
            colour_image(name, 50 + i).save(root / name / f"{i}.png")
    (root / "red" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    (root / "notes.txt").write_text("not an image")
    (root / ".hidden.png").write_bytes(b"")
    return root


def run(loaded, items, job_dir: Path, total: int, **options) -> dict:
    job_dir.mkdir(exist_ok=True)
    return classify_many(loaded, items, job_dir, total=total, **options)


def test_list_lines_with_and_without_labels():
    assert parse_line("a b/c d.jpg 2", CLASSES) == ("a b/c d.jpg", "2")
    assert parse_line("x/y.png red", CLASSES) == ("x/y.png", "red")
    assert parse_line("x/y z.png", CLASSES) == ("x/y z.png", "")
    assert parse_line("x/y.png", CLASSES) == ("x/y.png", "")
    assert parse_line("x/y.png zebra", CLASSES, lambda p: p == "x/y.png") == ("x/y.png", "zebra")


def test_folder_labels_come_from_class_folders(pictures):
    items = list(folder_items(pictures, CLASSES))
    assert count_folder(pictures) == len(items) == 13  # 12 images + broken.jpg; no .txt, no hidden file
    assert {(i.name, i.label) for i in items if i.name.startswith("red/")} >= {("red/0.png", 2), ("red/broken.jpg", 2)}


def test_accuracy_and_confusion_match_a_hand_count(loaded, pictures, tmp_path):
    # Labels as names or indices; two red images deliberately labelled dark, one line unreadable,
    # one missing, one with a label the model does not know.
    lines = [f"dark/{i}.png dark" for i in range(4)] + [f"light/{i}.png 1" for i in range(4)]
    lines += ["red/0.png red", "red/1.png red", "red/2.png dark", "red/3.png 0", "red/broken.jpg red",
              "missing.png light", "light/0.png zebra", "dark/0.png"]
    (tmp_path / "list.txt").write_text("\n".join(lines) + "\n\n")
    listing = tmp_path / "list.txt"
    assert count_list(listing) == len(lines)
    summary = run(loaded, list_items(listing, CLASSES, pictures), tmp_path / "job", count_list(listing), batch_size=5)
    # Hand count over the 12 readable, labelled lines (rows: the label given; columns: predicted).
    # The two red images labelled dark land in the dark row, red column. "zebra" is no class and
    # the last line has no label: both are classified but not counted.
    assert summary["confusion"] == [[4, 0, 2],   # labelled dark: 4 dark images, 2 red ones
                                    [0, 4, 0],   # labelled light
                                    [0, 0, 2]]   # labelled red
    assert summary["images"] == 16 and summary["errors"] == 2 and summary["labelled"] == 12
    assert summary["unknown_labels"] == 1
    assert summary["accuracy"] == pytest.approx(10 / 12)
    by_class = {r["class"]: r for r in summary["per_class"]}
    assert by_class["dark"]["recall"] == pytest.approx(4 / 6) and by_class["red"]["precision"] == pytest.approx(2 / 4)
    assert summary["most_confused"][0]["true"] == "dark" and summary["most_confused"][0]["predicted"] == "red"


def test_rows_paging_and_csv(loaded, pictures, tmp_path):
    job = tmp_path / "job"
    run(loaded, folder_items(pictures, CLASSES), job, 13, top=2, batch_size=4)
    assert results.row_count(job) == 13
    rows = results.read_rows(job, 10, 5)
    assert [r["row"] for r in rows] == [10, 11, 12]
    broken = next(r for r in results.read_rows(job, 0, 20) if r["image"] == "red/broken.jpg")
    assert broken["predictions"] == [] and "corrupt" in broken["error"]
    red = results.read_row(job, 8)  # dark 0-3, light 4-7, then red/0.png
    assert red["image"] == "red/0.png" and red["label"] == "red" and red["predictions"][0][0] == "red"
    assert len(red["predictions"]) == 2
    with open(job / results.RESULTS_CSV, newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 13 and table[8]["prediction_1"] == "red" and float(table[8]["confidence_1"]) > 0.5
    assert results.read_rows(job, 13, 5) == []


def test_top_n_per_class(loaded, pictures, tmp_path):
    summary = run(loaded, folder_items(pictures, CLASSES), tmp_path / "job", 13, top_n=3, batch_size=2)
    for entry in summary["top_n"]:
        images = entry["images"]
        assert len(images) == 3
        assert all(im["image"].startswith(entry["class"] + "/") for im in images)
        confidences = [im["confidence"] for im in images]
        assert confidences == sorted(confidences, reverse=True)


def test_stop_between_batches_keeps_rows(loaded, pictures, tmp_path):
    calls = []
    with pytest.raises(Aborted):
        run(loaded, folder_items(pictures, CLASSES), tmp_path / "job", 13, batch_size=4,
            should_stop=lambda: calls.append(1) or len(calls) > 2)
    assert results.row_count(tmp_path / "job") == 8


def test_decoding_processes_give_the_rows_of_decoding_in_process(loaded, pictures, tmp_path, monkeypatch):
    """120 lines (a pool of decoders) with unreadable, missing and refused ones among them: the
    same rows, errors included, in the same order as decoding in this process gives."""
    from trainyard.datasets import pipeline

    monkeypatch.setattr("os.cpu_count", lambda: 2)  # a pool even on a one-core machine

    good = [f"{pictures / c / f'{i}.png'} {c}" for c in CLASSES for i in range(4)]
    bad = [f"{pictures / 'red' / 'broken.jpg'}", f"{pictures / 'missing.png'}", "/etc/hostname"]
    lines = [(good + bad)[i % 15] for i in range(120)]
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(lines) + "\n")
    roots = [str(pictures)]
    pooled = run(loaded, list_items(listing, CLASSES, tmp_path), tmp_path / "pool", 120, roots=roots)
    monkeypatch.setattr(pipeline, "MIN_IMAGES_FOR_POOL", 10**9)
    alone = run(loaded, list_items(listing, CLASSES, tmp_path), tmp_path / "alone", 120, roots=roots)
    assert pooled == alone and pooled["errors"] == 24 and pooled["accuracy"] == 1.0
    table = [(tmp_path / job / results.RESULTS_CSV).read_bytes() for job in ("pool", "alone")]
    assert table[0] == table[1]
    errors = [r["error"] for r in results.read_rows(tmp_path / "pool", 12, 3)]
    assert "corrupt" in errors[0] and "does not exist" in errors[1] and "outside the data roots" in errors[2]


def test_a_split_is_read_as_it_is_classified_not_ahead(loaded, trained, tmp_path):
    """A dataset split's stored images stream batch by batch: never the whole split at once."""
    from trainyard.inference.sources import split_items

    dataset = trained.ctx.manager.folder(trained.dataset_id).dataset
    taken, seen = [], []

    def items():
        for item in split_items(dataset, "val", CLASSES):
            taken.append(item)
            yield item

    run(loaded, items(), tmp_path / "job", 18, dataset_dir=str(dataset), split="val", batch_size=4,
        progress=lambda done, total: seen.append((done, len(taken))))
    assert seen[0] == (4, 4) and seen[-1] == (18, 18)


def peak_python_memory(loaded, listing: Path, job: Path) -> int:
    tracemalloc.start()
    try:
        run(loaded, list_items(listing, CLASSES, listing.parent), job, count_list(listing), batch_size=64)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_stays_flat_over_thousands_of_images(loaded, pictures, tmp_path):
    """3,000 images need no more memory than 300: nothing per image is kept."""
    names = [f"{c}/{i}.png {c}" for c in CLASSES for i in range(4)]
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    for path, count in ((small, 300), (large, 3000)):
        path.write_text("".join(f"{pictures / names[i % 12]}\n" for i in range(count)))
    small_peak = peak_python_memory(loaded, small, tmp_path / "a")
    large_peak = peak_python_memory(loaded, large, tmp_path / "b")
    assert results.row_count(tmp_path / "b") == 3000
    assert large_peak < small_peak * 1.25 + 256 * 1024, (small_peak, large_peak)
