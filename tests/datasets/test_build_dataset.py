"""build_dataset end to end on generated images: counts, files, pixels, failures, append."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from dataset_helpers import make_class_tree
from PIL import Image

from trainyard.core.events import EventWriter, read_events
from trainyard.datasets.build import DatasetError, build_dataset
from trainyard.datasets.images import load_image
from trainyard.datasets.resize import resize_image
from trainyard.datasets.spec import DatasetSpec
from trainyard.datasets.storage import open_split, split_names


def spec_for(**fields) -> DatasetSpec:
    base = {"name": "test", "width": 16, "height": 16, "val_percent": 25}
    return DatasetSpec(**{**base, **fields})


def build(tmp_path: Path, spec: DatasetSpec, job: str = "job", workers: int = 1) -> tuple[dict, Path]:
    job_dir = tmp_path / job
    with EventWriter(job_dir) as events:
        info = build_dataset(spec, job_dir, events, workers=workers)
    return info, job_dir


@pytest.fixture
def tree(tmp_path: Path) -> dict[Path, np.ndarray]:
    written = make_class_tree(tmp_path / "images", {"cat": 8, "dog": 8, "emu": 8})
    (tmp_path / "images" / "dog" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    return written


@pytest.mark.parametrize("encoding", ["none", "png"])
def test_full_build(tmp_path: Path, tree, encoding: str):
    info, job_dir = build(tmp_path, spec_for(train_folder=str(tmp_path / "images"), encoding=encoding))
    ds = job_dir / "dataset"
    assert not (job_dir / "dataset.tmp").exists()
    assert info["classes"] == ["cat", "dog", "emu"]
    # 8 readable images per class at 25 %: 2 val, 6 train (dog's broken file is listed, not fatal)
    assert info["counts"] == {"train": {"cat": 6, "dog": 6, "emu": 6}, "val": {"cat": 2, "dog": 2, "emu": 2}}
    assert info["images"] == {"train": 18, "val": 6}
    assert [s["path"] for s in info["skipped"]] == [str(tmp_path / "images" / "dog" / "broken.png")]
    assert info["skipped"][0]["reason"]
    assert json.loads((ds / "info.json").read_text()) == info
    assert (ds / "labels.txt").read_text() == "cat\ndog\nemu\n"
    assert split_names(ds) == ["train", "val"]

    train = open_split(ds, "train")
    batch = train.read_batch(range(len(train)))
    assert batch.shape == (18, 16, 16, 3) and batch.dtype == np.uint8
    # Each stored image is exactly the direct resize of one source file of its class.
    expected = {}
    for path in tree:
        pixels = resize_image(load_image(path, 3), 16, 16, "squash")
        expected[pixels.tobytes()] = path.parent.name
    for image, label in zip(batch, train.labels):
        assert expected[image.tobytes()] == info["classes"][label]

    mean = np.load(ds / "mean.npy")
    assert mean.dtype == np.float32 and mean.shape == (16, 16, 3)
    np.testing.assert_allclose(mean, batch.mean(axis=0), rtol=1e-5)
    assert Image.open(ds / "mean.png").size == (16, 16)

    kinds = [e["type"] for e in read_events(job_dir / "events.jsonl")]
    assert "progress" in kinds and kinds[-1] == "result"


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_parallel_build_matches_single_process(tmp_path: Path, tree, monkeypatch, start_method: str):
    import multiprocessing

    import trainyard.datasets.pipeline as pipeline_module

    monkeypatch.setattr(pipeline_module, "mp_context", lambda: multiprocessing.get_context(start_method))
    monkeypatch.setattr(pipeline_module, "MIN_IMAGES_FOR_POOL", 2)  # use the pool even for 24 images
    monkeypatch.setattr(pipeline_module, "CHUNK_BYTES", 16 * 16 * 5)  # 5 images a task: several tasks
    spec = spec_for(train_folder=str(tmp_path / "images"), resize="fill", channels=1, seed=5)
    one, dir_one = build(tmp_path, spec, "one", workers=1)
    two, dir_two = build(tmp_path, spec, "two", workers=2)
    assert one["counts"] == two["counts"]
    for split in ("train", "val"):
        a, b = open_split(dir_one / "dataset", split), open_split(dir_two / "dataset", split)
        assert a.shape == (16, 16, 1)
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.read_batch(range(len(a))), b.read_batch(range(len(b))))


def test_fewer_than_two_classes_fails_cleanly(tmp_path: Path):
    make_class_tree(tmp_path / "images", {"cat": 5, "dog": 1})
    with pytest.raises(DatasetError, match="at least two classes"):
        build(tmp_path, spec_for(train_folder=str(tmp_path / "images")))
    assert not (tmp_path / "job" / "dataset").exists()
    assert not (tmp_path / "job" / "dataset.tmp").exists()


def test_all_images_unreadable_fails(tmp_path: Path):
    for name in ("cat", "dog"):
        for i in range(3):
            (tmp_path / "images" / name).mkdir(parents=True, exist_ok=True)
            (tmp_path / "images" / name / f"{i}.jpg").write_bytes(b"junk")
    with pytest.raises(DatasetError, match="no usable image"):
        build(tmp_path, spec_for(train_folder=str(tmp_path / "images")))
    assert not (tmp_path / "job" / "dataset").exists()
    assert not (tmp_path / "job" / "dataset.tmp").exists()


def test_missing_folder_fails(tmp_path: Path):
    with pytest.raises(DatasetError, match="train folder not found"):
        build(tmp_path, spec_for(train_folder=str(tmp_path / "nowhere")))


def test_separate_val_folder_takes_no_percent_from_train(tmp_path: Path):
    make_class_tree(tmp_path / "train", {"cat": 4, "dog": 4})
    make_class_tree(tmp_path / "val", {"cat": 1, "dog": 2, "yak": 1}, seed=9)
    info, _ = build(tmp_path, spec_for(train_folder=str(tmp_path / "train"), val_folder=str(tmp_path / "val"),
                                       val_percent=50, test_percent=25))
    assert info["counts"]["train"] == {"cat": 3, "dog": 3}  # only the test percent is taken
    assert info["counts"]["val"] == {"cat": 1, "dog": 2}
    assert info["counts"]["test"] == {"cat": 1, "dog": 1}
    assert any("'yak'" in s["reason"] for s in info["skipped"])


def test_list_source_reports_bad_lines(tmp_path: Path):
    tree = make_class_tree(tmp_path / "imgs", {"a": 4, "b": 4})
    lines = [f"{p.relative_to(tmp_path / 'imgs')} {0 if p.parent.name == 'a' else 1}" for p in tree]
    (tmp_path / "train.txt").write_text("\n".join(lines[:3] + ["garbage line here"] + lines[3:]) + "\n")
    (tmp_path / "labels.txt").write_text("a\nb\n")
    info, _ = build(tmp_path, spec_for(train_list=str(tmp_path / "train.txt"), labels_file=str(tmp_path / "labels.txt"),
                                       image_root=str(tmp_path / "imgs")))
    assert info["classes"] == ["a", "b"]
    assert sum(info["images"].values()) == 8
    assert [s["reason"][:7] for s in info["skipped"]] == ["line 4:"]


def test_archive_source(tmp_path: Path):
    tree = make_class_tree(tmp_path / "images", {"cat": 3, "dog": 3})
    with zipfile.ZipFile(tmp_path / "upload.zip", "w") as zf:
        for path in tree:
            zf.write(path, f"my_photos/{path.parent.name}/{path.name}")
    info, job_dir = build(tmp_path, spec_for(train_archive=str(tmp_path / "upload.zip"), val_percent=0))
    assert info["counts"] == {"train": {"cat": 3, "dog": 3}}
    assert not (job_dir / "extract.tmp").exists()


def test_append_keeps_parent_images_and_adds_classes(tmp_path: Path):
    make_class_tree(tmp_path / "v1", {"cat": 4, "dog": 4})
    parent, parent_job = build(tmp_path, spec_for(train_folder=str(tmp_path / "v1"), encoding="png"), "v1job")
    make_class_tree(tmp_path / "v2", {"dog": 1, "emu": 4}, seed=3)  # one dog is enough: dog exists
    child, child_job = build(tmp_path, spec_for(train_folder=str(tmp_path / "v2"), width=99, height=99,
                                                parent_dir=str(parent_job / "dataset")), "v2job")
    assert child["classes"] == ["cat", "dog", "emu"]
    assert child["width"] == 16 and child["parent"] == str(parent_job / "dataset")
    assert child["counts"]["train"] == {"cat": 3, "dog": 4, "emu": 3}
    assert child["counts"]["val"] == {"cat": 1, "dog": 1, "emu": 1}
    old = open_split(parent_job / "dataset", "train")
    new = open_split(child_job / "dataset", "train")
    np.testing.assert_array_equal(new.read_batch(range(len(old))), old.read_batch(range(len(old))))
    np.testing.assert_array_equal(new.labels[: len(old)], old.labels)


def test_interrupted_build_leaves_nothing(tmp_path: Path, tree, monkeypatch):
    import trainyard.datasets.pipeline as pipeline_module

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline_module, "process_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path, spec_for(train_folder=str(tmp_path / "images")))
    assert not (tmp_path / "job" / "dataset.tmp").exists()
    assert not (tmp_path / "job" / "dataset").exists()


def test_list_entries_outside_data_roots_are_skipped(tmp_path: Path):
    inside = make_class_tree(tmp_path / "data" / "imgs", {"a": 3, "b": 3})
    outside = make_class_tree(tmp_path / "private", {"a": 1}, seed=4)
    lines = [f"{p} {0 if p.parent.name == 'a' else 1}" for p in [*inside, *outside]]
    (tmp_path / "data" / "train.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "data" / "labels.txt").write_text("a\nb\n")
    spec = spec_for(train_list=str(tmp_path / "data" / "train.txt"), data_roots=[str(tmp_path / "data")],
                    labels_file=str(tmp_path / "data" / "labels.txt"), val_percent=0)
    info, _ = build(tmp_path, spec)
    assert info["counts"]["train"] == {"a": 3, "b": 3}
    assert [(Path(s["path"]).parent.name, s["reason"]) for s in info["skipped"]] == [
        ("a", "outside the allowed data folders")]


def test_append_to_jpeg_dataset_copies_bytes(tmp_path: Path):
    make_class_tree(tmp_path / "v1", {"cat": 3, "dog": 3})
    _, parent_job = build(tmp_path, spec_for(train_folder=str(tmp_path / "v1"), encoding="jpeg", val_percent=0), "p")
    make_class_tree(tmp_path / "v2", {"cat": 2}, seed=8)
    _, child_job = build(tmp_path, spec_for(train_folder=str(tmp_path / "v2"), encoding="jpeg", val_percent=0,
                                            parent_dir=str(parent_job / "dataset")), "c")
    old, new = open_split(parent_job / "dataset", "train"), open_split(child_job / "dataset", "train")
    assert len(new) == len(old) + 2
    assert all(new.read_encoded(i) == old.read_encoded(i) for i in range(len(old)))


def test_val_split_with_only_unreadable_images(tmp_path: Path):
    make_class_tree(tmp_path / "train", {"cat": 2, "dog": 2})
    (tmp_path / "val" / "cat").mkdir(parents=True)
    (tmp_path / "val" / "cat" / "x.png").write_bytes(b"junk")
    info, job_dir = build(tmp_path, spec_for(train_folder=str(tmp_path / "train"), val_folder=str(tmp_path / "val")))
    assert info["counts"]["val"] == {"cat": 0, "dog": 0}
    assert len(open_split(job_dir / "dataset", "val")) == 0


def test_per_class_counts_are_reported_as_they_grow(tmp_path, tree):
    """Summary events carry the counts written so far; the last ones are the dataset's counts."""
    info, job_dir = build(tmp_path, spec_for(train_folder=str(tmp_path / "images")))
    reported = [e["counts"] for e in read_events(job_dir / "events.jsonl", {"summary"})]
    assert reported, "no counts were reported during the build"
    assert reported[-1] == info["counts"]
    totals = [sum(sum(c.values()) for c in counts.values()) for counts in reported]
    assert totals == sorted(totals)  # counts only grow
