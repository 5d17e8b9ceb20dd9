"""``trainyard segment`` and ``trainyard evaluate`` on a trained segmenter: one index PNG per image
at the image's own size, named by its stem; mean IoU and per-class IoU on its validation split."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.segmentation_data import CLASSES, shapes
from tests.segmentation_model import trained_segmenter
from trainyard.cli.main import app

pytestmark = pytest.mark.slow  # shares the trained segmenter (tests/segmentation_model.py)


def test_segment_writes_one_index_png_per_image_at_its_size_named_by_its_stem(tmp_path_factory, tmp_path):
    trained = trained_segmenter(tmp_path_factory)
    rng = np.random.default_rng(7)
    image, truth = shapes(rng, 64)
    big = Image.fromarray(image).resize((96, 80), Image.Resampling.NEAREST)  # another size than trained
    big.save(tmp_path / "wide.jpg", quality=95)
    (tmp_path / "folder").mkdir()
    Image.fromarray(image).save(tmp_path / "folder" / "same.png")
    result = CliRunner().invoke(app, ["segment", trained.model_id, str(tmp_path / "wide.jpg"),
                                      str(tmp_path / "folder"), "--output", str(tmp_path / "out"), "--json"],
                                env=trained.env())
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["classes"] == CLASSES and len(doc["results"]) == 2
    wide, same = Image.open(tmp_path / "out" / "wide.png"), Image.open(tmp_path / "out" / "same.png")
    assert wide.size == (96, 80) and same.size == (64, 64) and wide.mode == "L"
    found = np.array(same)
    assert set(np.unique(found).tolist()) <= {0, 1, 2}
    assert (found == truth).mean() > 0.8  # the shapes are where they are drawn
    assert abs(sum(doc["results"][1]["areas"].values()) - 1) < 1e-3


def test_segment_reports_an_unreadable_image_and_still_writes_the_others(tmp_path_factory, tmp_path):
    trained = trained_segmenter(tmp_path_factory)
    (tmp_path / "broken.png").write_bytes(b"not a png")
    Image.fromarray(shapes(np.random.default_rng(1), 64)[0]).save(tmp_path / "good.png")
    result = CliRunner().invoke(app, ["segment", trained.model_id, str(tmp_path / "broken.png"),
                                      str(tmp_path / "good.png"), "--output", str(tmp_path / "out")],
                                env=trained.env())
    assert result.exit_code == 1 and "broken.png" in result.stderr
    assert (tmp_path / "out" / "good.png").is_file() and not (tmp_path / "out" / "broken.png").exists()


def test_evaluate_answers_the_mean_iou_and_each_class_iou(tmp_path_factory):
    trained = trained_segmenter(tmp_path_factory)
    result = CliRunner().invoke(app, ["evaluate", trained.model_id, "--json"], env=trained.env())
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["task"] == "segmentation" and doc["split"] == "val" and doc["images"] == 12
    assert doc["miou"] > 0.6 and [row["class"] for row in doc["per_class"]] == CLASSES
    assert all(row["iou"] is not None and row["iou"] > 0.3 for row in doc["per_class"])
    assert np.array(doc["confusion"]).sum() == 12 * 64 * 64
    text = CliRunner().invoke(app, ["evaluate", trained.model_id], env=trained.env())
    assert text.exit_code == 0 and "mIoU" in text.stdout and "square" in text.stdout


def test_a_segment_many_job_writes_each_mask_and_a_row_per_image(tmp_path_factory):
    from trainyard.inference.results import read_rows, row_parser
    from trainyard.jobs.kinds.inference import create_inference_job

    trained = trained_segmenter(tmp_path_factory)
    ctx = trained.ctx
    job = create_inference_job(ctx, "classify-many", trained.model_id, folder=str(trained.data / "images"),
                               foreground=True)
    job = ctx.manager.run_foreground(job.id, poll_s=0.05)
    assert job.status == "done", job.error
    folder = ctx.manager.folder(job.id)
    rows = read_rows(folder.path, 0, 100, row_parser("segmentation"))
    assert len(rows) == 48 and all(r["error"] is None for r in rows)
    mask = Image.open(folder.work / rows[0]["mask"])
    assert mask.size == (64, 64) and set(rows[0]["areas"]) == set(CLASSES)
