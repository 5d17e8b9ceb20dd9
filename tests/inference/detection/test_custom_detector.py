"""A custom detection network end to end: checked before it is queued, trained confined, and its
detect, evaluate and export run confined too. Its file refuses to load wherever it can read a
secret outside every sandbox's folders (tests/detection_model.py), so any of these that ran the
user's code in the CLI or server process would fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from PIL import Image

from tests.detection_data import draw_image, shapes_truth
from tests.detection_model import CLASSES, CUSTOM_SIZE, custom_detector
from trainyard.core.errors import InvalidInput
from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
from trainyard.jobs.store.confinement import recorded_user_code
from trainyard.networks.custom_detection import TEMPLATE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def custom(tmp_path_factory):
    return custom_detector(tmp_path_factory)


@pytest.fixture(scope="module")
def image(custom):
    path = custom.settings.data_roots[0] / "new.png"
    shapes = shapes_truth(3, (CUSTOM_SIZE, CUSTOM_SIZE), tuple(CLASSES), seed=5)[2]
    Image.fromarray(draw_image(shapes, (CUSTOM_SIZE, CUSTOM_SIZE), tuple(CLASSES), np.random.default_rng(3))).save(path)
    return path


def cli(custom, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, **custom.env(), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=900)


def test_it_trained_confined_as_user_code(custom):
    assert recorded_user_code(custom.ctx, custom.model_id) is True
    doc = custom.ctx.store.get_job(custom.model_id)
    assert doc.status == "done"


def test_a_queued_custom_detector_is_checked_as_a_detector(custom):
    """Before it is queued (not in the foreground): the template passes, a wrong layer is refused
    with its line."""
    def request(source: str) -> TrainRequest:
        return TrainRequest(name="queued", datasets=[custom.dataset_id], network_source=source,
                            settings={"epochs": 1})

    (job,) = create_model_jobs(custom.ctx, request(TEMPLATE))
    assert job.status == "queued"
    custom.ctx.manager.abort(job.id)
    bad = TEMPLATE.replace("nn.Conv2d(64, 128, 3", "nn.Conv2d(48, 128, 3")
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "nn.Conv2d(48, 128, 3" in text)
    with pytest.raises(InvalidInput) as refused:
        create_model_jobs(custom.ctx, request(bad))
    assert f"line {line}: layer 'backbone.6' (Conv2d) expects 48 input channels, gets 64" in str(refused.value)


def test_cli_detect_runs_it_in_its_worker(custom, image):
    done = cli(custom, "detect", custom.model_id, str(image), "--threshold", "0", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = json.loads(done.stdout)["results"]
    assert result["image"] == str(image)
    for box in result["boxes"]:
        assert box["label"] in CLASSES and 0 <= box["score"] <= 1
        x1, y1, x2, y2 = box["box"]
        assert 0 <= x1 <= x2 <= CUSTOM_SIZE and 0 <= y1 <= y2 <= CUSTOM_SIZE


def test_the_api_detects_with_its_backbone_layers(custom, image):
    from fastapi.testclient import TestClient

    from trainyard.web.app import create_app

    with TestClient(create_app(custom.settings, run_scheduler=False)) as client:
        response = client.post(f"/api/models/{custom.model_id}/detect?threshold=0&visualize=true",
                               files=[("images", (image.name, image.read_bytes(), "image/png"))])
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["network"] is None and doc["classes"] == sorted(CLASSES)
    layers = doc["results"][0]["visualization"]["layers"]
    assert layers[0]["name"] == "input" and layers[0]["output_shape"] == [3, CUSTOM_SIZE, CUSTOM_SIZE]
    names = [layer["name"] for layer in layers[1:]]
    assert names[:3] == ["backbone.0", "backbone.1", "backbone.2"]  # the template's own backbone, in order
    assert all(name.startswith("backbone.") for name in names)  # not the heads
    conv = layers[1]
    assert conv["type"] == "Conv2d" and conv["output_shape"] == [32, CUSTOM_SIZE // 2, CUSTOM_SIZE // 2]
    assert conv["weight_image"].startswith("data:image/png") and conv["activation_image"].startswith("data:image/png")
    assert len(conv["weights"]["histogram"]["counts"]) == 20 and conv["activations"]["std"] > 0


def test_cli_evaluate_gives_its_map(custom):
    done = cli(custom, "evaluate", custom.model_id, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["task"] == "detection" and doc["images"] == 12 and 0 <= doc["map50"] <= 1


def test_cli_export_writes_its_archive(custom, tmp_path):
    output = tmp_path / "custom.tar.gz"
    done = cli(custom, "export", custom.model_id, "--output", str(output))
    assert done.returncode == 0, done.stderr[-2000:]
    with tarfile.open(output) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
        network = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("network.py"))).read()
    assert {"model.onnx", "network.py", "preprocess.json"} <= names
    assert b"FasterRCNN(" in network and b"secret.txt" in network  # the user's own file
