"""Detection datasets built by the real dataset job: through the API (COCO, YOLO with a val
folder) and the CLI (KITTI), with the page and the explorer's JSON showing the boxes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.detection_data import make_shapes_dataset, shapes_truth
from trainyard.cli.main import app
from trainyard.core.paths import JobFolder
from trainyard.datasets.detection.store import DetectionSplit
from trainyard.settings import Settings

N, SIZE = 16, (120, 80)


def truth_counts() -> tuple[int, dict[str, int]]:
    shapes = [s for image in shapes_truth(N, SIZE) for s in image]
    return len(shapes), {name: sum(s.label == name for s in shapes) for name in ("square", "disc")}


@pytest.fixture(scope="module")
def server(tmp_path_factory, client_for, wait_job):
    tmp = tmp_path_factory.mktemp("detect-api")
    settings = Settings(home=tmp / "home", data_roots=[tmp / "data"])
    images, labels = make_shapes_dataset(settings.data_roots[0] / "coco", n_images=N, size=SIZE, fmt="coco")
    with client_for(settings) as client:
        response = client.post("/api/datasets", json={
            "name": "shapes", "task": "detection", "train_folder": str(images), "train_labels": str(labels),
            "width": 64, "height": 64, "val_percent": 25})
        assert response.status_code == 201, response.text
        assert response.json()["task"] == "detection"
        job = wait_job(client, response.json()["id"])
        assert job["status"] == "done", job["error"]
        detail = client.get(f"/api/datasets/{job['id']}").json()
        yield SimpleNamespace(client=client, settings=settings, detail=detail)


def test_api_build_counts_boxes_per_class(server):
    detail = server.detail
    n_boxes, per_class = truth_counts()
    assert detail["task"] == "detection" and detail["labels_format"] == "coco" and detail["resize"] == "pad"
    assert detail["classes"] == ["disc", "square"]  # no class list, no classes.txt: sorted (README)
    assert detail["images"] == {"train": 12, "val": 4}
    for name, n in per_class.items():
        assert sum(detail["box_counts"][split][name] for split in ("train", "val")) == n
    assert sum(detail["box_sizes"]["counts"]["train"]) + sum(detail["box_sizes"]["counts"]["val"]) == n_boxes
    assert detail["counts_meaning"]["box_counts"] == "boxes of the class"
    assert detail["skipped"] == [] and detail["label_notes"] == []


def test_stored_split_maps_back_to_the_labels(server):
    folder = JobFolder(server.settings.home / "jobs" / server.detail["id"]).dataset
    truth = {f"img_{i:04d}": shapes for i, shapes in enumerate(shapes_truth(N, SIZE))}
    labels = (folder / "labels.txt").read_text().split()
    seen = 0
    for split_name in ("train", "val"):
        split = DetectionSplit(folder / split_name)
        assert (split.width, split.height) == (64, 64)
        for i in range(len(split)):
            boxes, classes = split.targets(i)
            original = split.to_original(i, boxes)
            matches = [k for k, shapes in truth.items()
                       if sorted((s.label, s.box) for s in shapes) ==
                       sorted((labels[c], tuple(int(round(v)) for v in b)) for b, c in zip(original, classes))]
            assert matches, f"{split_name} image {i}: no generated image has boxes {original.tolist()}"
            seen += 1
    assert seen == N


def test_page_shows_box_stats_and_the_explorer_gets_boxes(server):
    client, dataset_id = server.client, server.detail["id"]
    html = client.get(f"/datasets/{dataset_id}").text
    for marker in ('id="box-counts"', 'id="box-size-histogram"', "Boxes per class", 'data-task="detection"',
                   "coco labels", "Images holding at least one box"):
        assert marker in html, marker
    page = client.get(f"/api/datasets/{dataset_id}/images", params={"split": "train", "label": 1}).json()
    assert page["width"] == 64 and page["total"] == server.detail["counts"]["train"]["disc"]
    assert all(any(b["label"] == 1 for b in image["boxes"]) for image in page["images"])
    assert all(image["label"] == len(image["boxes"]) for image in page["images"])


def test_append_to_a_detection_dataset_is_refused(server):
    response = server.client.post(f"/api/datasets/{server.detail['id']}/append",
                                  json={"train_folder": str(server.settings.data_roots[0])})
    assert response.status_code == 409 and "detection dataset" in response.json()["detail"]
    assert "Add images" not in server.client.get(f"/datasets/{server.detail['id']}").text


def test_api_refuses_bad_detection_fields(server):
    response = server.client.post("/api/datasets", json={"name": "x", "task": "detection",
                                                         "train_folder": "/nowhere"})
    assert response.status_code == 422 and "train_labels" in json.dumps(response.json()["detail"])
    outside = server.client.post("/api/datasets", json={
        "name": "x", "task": "detection", "train_folder": str(server.settings.data_roots[0] / "coco" / "images"),
        "train_labels": "/etc/passwd"})
    assert outside.status_code in (403, 422), outside.text  # a labels path outside the data roots


def test_api_yolo_with_a_val_folder_and_squash(server, wait_job):
    root = server.settings.data_roots[0]
    train_images, train_labels = make_shapes_dataset(root / "yolo-train", n_images=8, fmt="yolo", seed=1)
    val_images, val_labels = make_shapes_dataset(root / "yolo-val", n_images=4, fmt="yolo", seed=2)
    response = server.client.post("/api/datasets", json={
        "name": "yolo", "task": "detection", "train_folder": str(train_images), "train_labels": str(train_labels),
        "val_folder": str(val_images), "val_labels": str(val_labels), "resize": "squash", "width": 48,
        "height": 32, "classes": "square,disc"})
    assert response.status_code == 201, response.text
    job = wait_job(server.client, response.json()["id"])
    assert job["status"] == "done", job["error"]
    detail = server.client.get(f"/api/datasets/{job['id']}").json()
    assert detail["images"] == {"train": 8, "val": 4} and detail["resize"] == "squash"
    split = DetectionSplit(JobFolder(server.settings.home / "jobs" / job["id"]).dataset / "val")
    assert split.scales(0) == pytest.approx((48 / 96, 32 / 96))


def test_cli_builds_kitti_and_shows_detection_counts(tmp_path):
    data = tmp_path / "data"
    images, labels = make_shapes_dataset(data / "kitti", n_images=N, size=SIZE, fmt="kitti")
    (labels / "img_0005.txt").write_text("square 1 2\n")  # a malformed line: listed, image left out
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(data), "TRAINYARD_AUTH_TOKEN": ""}
    runner = CliRunner()
    result = runner.invoke(app, ["dataset", "create", "--name", "k", "--task", "detection", "--train-folder",
                                 str(images), "--train-labels", str(labels), "--size", "64x48", "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == "done" and doc["labels_format"] == "kitti" and doc["classes"] == ["disc", "square"]
    assert sum(doc["images"].values()) == N - 1
    (bad,) = doc["skipped"]
    assert bad["path"].endswith("img_0005.txt") and bad["reason"].startswith("line 1: 3 fields")
    shown = runner.invoke(app, ["dataset", "show", doc["id"]], env=env)
    assert shown.exit_code == 0, shown.output
    assert "task: detection (kitti labels, resize pad)" in shown.stdout
    train = doc["box_counts"]["train"]
    disc_images = doc["counts"]["train"]["disc"]
    assert f"{sum(train.values())} boxes: disc {train['disc']} in {disc_images} images" in shown.stdout
    assert "img_0005.txt: line 1" in shown.stdout
    refused = runner.invoke(app, ["dataset", "create", "--name", "k", "--task", "detection", "--train-folder",
                                  str(images), "--train-labels", str(labels), "--resize", "crop"], env=env)
    assert refused.exit_code == 2 and "resize 'crop' is not a detection resize" in refused.output
    assert np.isfinite(doc["box_sizes"]["edges"]).all()
