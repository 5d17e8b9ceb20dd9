"""Deploy a detector: the archive's ONNX graph agrees with PyTorch, its scripts with the server,
and `trainyard import` brings it back as a detector."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from trainyard.inference.detection.detect import detect
from trainyard.inference.detection.detector import load_detector
from trainyard.inference.export import export_model
from trainyard.inference.snapshots import model_checkpoint


@pytest.fixture(scope="module")
def archive(detector, tmp_path_factory):
    return export_model(detector.job_dir, None, tmp_path_factory.mktemp("export") / "detector.tar.gz")


def test_the_archive_holds_the_graph_with_its_post_processing(archive):
    names = [m.split("/", 1)[1] for m in archive.members]
    assert names == ["README.md", "info.json", "preprocess.json", "labels.txt", "model.onnx", "example.py",
                     "use_archive.py", "weights.safetensors", "network.py"]
    assert archive.check["boxes_compared"] > 0  # the validation images' confident boxes matched
    assert archive.check["max_box_diff"] <= archive.check["box_atol"]
    with tarfile.open(archive.path) as tar:
        prep = json.load(tar.extractfile(archive.members[2]))
    assert prep["task"] == "detection" and prep["resize"] == "pad" and prep["input"]["name"] == "images"


def _server_results(detector, images, threshold=0.5):
    from trainyard.datasets.images import load_image

    loaded = load_detector(model_checkpoint(detector.job_dir)[1])
    return detect(loaded, [(str(p), load_image(p, 3)) for p in images], threshold)


def _close(ours, theirs):
    assert [r["image"] for r in ours] == [r["image"] for r in theirs]
    for a, b in zip(ours, theirs):
        assert [x["label"] for x in a["boxes"]] == [x["label"] for x in b["boxes"]]
        assert np.allclose([x["box"] for x in a["boxes"]], [x["box"] for x in b["boxes"]], atol=0.05)
        assert np.allclose([x["score"] for x in a["boxes"]], [x["score"] for x in b["boxes"]], atol=1e-3)


def test_the_archive_scripts_give_the_server_answers(detector, archive, tmp_path):
    images = sorted((detector.data / "images").glob("*.png"))[1:5]
    expected = _server_results(detector, images, 0.3)
    run = subprocess.run([sys.executable, str(_script(archive, tmp_path)), str(archive.path),
                          *map(str, images), "--json", "--threshold", "0.3", "--draw", str(tmp_path / "drawn")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    _close(json.loads(run.stdout)["results"], expected)
    assert len(list((tmp_path / "drawn").glob("*.boxes.png"))) == len(images)
    with tarfile.open(archive.path) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (top,) = (tmp_path / "unpacked").iterdir()
    run = subprocess.run([sys.executable, str(top / "example.py"), str(top / "model.onnx"), *map(str, images),
                          "-l", str(top / "labels.txt"), "-p", str(top / "preprocess.json"), "--json",
                          "--threshold", "0.3"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    _close(json.loads(run.stdout)["results"], expected)


def _script(archive, tmp_path):
    with tarfile.open(archive.path) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/use_archive.py"))
        path = tmp_path / "use_archive.py"
        path.write_bytes(tar.extractfile(member).read())
    return path


def test_import_brings_the_detector_back(detector, archive):
    from trainyard.jobs.kinds.imported import import_model_archive

    job = import_model_archive(detector.ctx, archive.path, name="imported detector")
    folder = detector.ctx.manager.folder(job.id)
    images = sorted((detector.data / "images").glob("*.png"))[1:4]
    from trainyard.datasets.images import load_image

    loaded = load_detector(model_checkpoint(folder.path)[1])
    ours = detect(loaded, [(str(p), load_image(p, 3)) for p in images], 0.3)
    _close(ours, _server_results(detector, images, 0.3))
