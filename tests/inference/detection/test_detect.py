"""Detect: the CLI's and the API's boxes, in the original image's pixels, and evaluate's mAP.

The images are new ones, drawn at twice the stored size and another aspect (192x176 for a
96x96 dataset, so pad letterboxes them, 4 grey rows above and below): boxes must come back
where the shapes are drawn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.detection_data import draw_image, shapes_truth
from tests.detection_model import CLASSES
from trainyard.inference.detection.evaluate import iou

SIZE = (192, 176)


@pytest.fixture(scope="module")
def originals(detector, tmp_path_factory):
    """(paths, truth) of new images inside the data roots, their shapes' exact boxes."""
    folder = detector.settings.data_roots[0] / "originals"
    folder.mkdir(parents=True, exist_ok=True)
    classes = tuple(CLASSES)  # the generator's order: it gives each class its shape and colour
    truth = shapes_truth(8, SIZE, classes, seed=99)[1:]  # image 0 has no shapes
    rng = np.random.default_rng(7)
    paths = []
    from PIL import Image

    for i, shapes in enumerate(truth):
        path = folder / f"original_{i}.png"
        Image.fromarray(draw_image(shapes, SIZE, classes, rng)).save(path)
        paths.append(path)
    return paths, truth


def cli(detector, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, **detector.env(), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.fixture(scope="module")
def detected(detector, originals):
    paths, _ = originals
    done = cli(detector, "detect", detector.model_id, *map(str, paths), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_detect_json_shape(detected, originals):
    paths, _ = originals
    assert [r["image"] for r in detected["results"]] == [str(p) for p in paths]
    for result in detected["results"]:
        scores = [b["score"] for b in result["boxes"]]
        assert scores == sorted(scores, reverse=True) and all(0.5 <= s <= 1 for s in scores)
        for box in result["boxes"]:
            assert set(box) == {"label", "score", "box"} and box["label"] in CLASSES
            x1, y1, x2, y2 = box["box"]
            assert 0 <= x1 < x2 <= SIZE[0] and 0 <= y1 < y2 <= SIZE[1]


def test_boxes_are_in_the_original_pixels(detected, originals):
    _, truth = originals
    found = matched = 0
    for result, shapes in zip(detected["results"], truth):
        gt = np.array([s.box for s in shapes], np.float64).reshape(-1, 4)
        for box in result["boxes"]:
            found += 1
            overlaps = iou(np.array([box["box"]]), gt)[0] if len(gt) else np.zeros(0)
            same = [s.label == box["label"] for s in shapes]
            matched += bool(len(gt) and (overlaps >= 0.5)[same].any())
    assert found >= 2  # recall is not the point here (shapes smaller than trained on): where they land is
    # most boxes land where the shapes are, at twice the stored size (boxes left in stored pixels,
    # half the size and off the shapes, match none)
    assert matched >= 2 and matched > found / 2


def test_the_api_gives_the_cli_answer(detector_client, detector, detected, originals):
    paths, _ = originals
    files = [("images", (p.name, p.read_bytes(), "image/png")) for p in paths]
    response = detector_client.post(f"/api/models/{detector.model_id}/detect", files=files)
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["classes"] == sorted(CLASSES) and doc["threshold"] == 0.5
    for ours, theirs in zip(doc["results"], detected["results"]):
        assert [b["label"] for b in ours["boxes"]] == [b["label"] for b in theirs["boxes"]]
        assert np.allclose([b["box"] for b in ours["boxes"]], [b["box"] for b in theirs["boxes"]], atol=0.02)


def test_the_api_threshold_keeps_fewer_boxes(detector_client, detector, originals):
    path = originals[0][0]
    counts = []
    for threshold in (0.1, 0.9):
        response = detector_client.post(f"/api/models/{detector.model_id}/detect?threshold={threshold}",
                                        files=[("images", (path.name, path.read_bytes(), "image/png"))])
        assert response.status_code == 200, response.text
        counts.append(len(response.json()["results"][0]["boxes"]))
    assert counts[0] >= counts[1]
    bad = detector_client.post(f"/api/models/{detector.model_id}/detect",
                               files=[("images", ("x.png", b"not an image", "image/png"))])
    assert 400 <= bad.status_code < 500 and "x.png" in bad.json()["detail"]


def test_evaluate_gives_map_per_class_ap_curves_and_misses(detector):
    done = cli(detector, "evaluate", detector.model_id, "--split", "val", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["task"] == "detection" and doc["images"] == 32
    assert 0.5 < doc["map50"] <= 1 and 0 < doc["map"] <= doc["map50"]
    assert sorted(row["class"] for row in doc["per_class"]) == sorted(CLASSES)
    assert np.isclose(np.mean([row["ap50"] for row in doc["per_class"]]), doc["map50"], atol=1e-3)
    assert all(len(curve) == 101 for curve in doc["pr_curves"].values())
    assert all(row["missed"] or row["false_positives"] for row in doc["worst"])
    text = cli(detector, "evaluate", detector.model_id)
    assert text.returncode == 0 and "mAP@0.5" in text.stdout


def test_the_model_pages_are_the_detection_variants(detector_client, detector):
    page = detector_client.get(f"/models/{detector.model_id}/classify")
    assert page.status_code == 200 and "Detect one image" in page.text and 'id="threshold"' in page.text
    model = detector_client.get(f"/models/{detector.model_id}")
    assert model.status_code == 200 and 'data-task="detection"' in model.text and ">Detect</a>" in model.text
    doc = detector_client.get(f"/api/models/{detector.model_id}").json()
    assert doc["task"] == "detection" and set(doc["best"]) >= {"epoch", "val_map50"}
