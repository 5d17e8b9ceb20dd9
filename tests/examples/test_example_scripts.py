"""The example scripts of a downloaded archive give the server's answers, without trainyard.

Every script runs in a subprocess that sees numpy, Pillow and onnxruntime but cannot import
trainyard (checked), from a fresh folder holding only the unpacked archive.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.inference.deploy_helpers import (
    PACKAGED_SCRIPTS,
    REPO_SCRIPTS,
    as_matrix,
    classes_of,
    make_checkpoint_job,
    odd_images,
    run_isolated,
    script_json,
    server_probabilities,
    unpack,
)
from trainyard.artifact.checkpoint import checkpoint_for_epoch
from trainyard.inference.export import export_model

SCRIPTS = ("example.py", "use_archive.py")


@pytest.mark.parametrize("name", SCRIPTS)
def test_repo_examples_are_the_packaged_ones(name):
    """examples/classification shows what the archive ships: links to the packaged scripts."""
    assert (REPO_SCRIPTS / name).resolve() == (PACKAGED_SCRIPTS / name).resolve(), (
        f"examples/classification/{name} should link to src/trainyard/examples/classification/{name}")


def test_use_archive_says_which_file_is_missing_without_a_traceback(tmp_path):
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(b"not checked before the images are")
    result = run_isolated([str(PACKAGED_SCRIPTS / "use_archive.py"), str(archive), str(tmp_path / "nope.png")],
                          tmp_path, check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f"no such file: {tmp_path / 'nope.png'}"


def test_use_archive_says_a_file_is_not_an_archive_without_a_traceback(tmp_path):
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(b"a page of HTML saved by mistake")
    (tmp_path / "cat.png").write_bytes(b"")
    result = run_isolated([str(PACKAGED_SCRIPTS / "use_archive.py"), str(archive), "cat.png"], tmp_path, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(f"{archive} is not a trainyard model archive (")
    assert "Traceback" not in result.stderr
    folder = run_isolated([str(PACKAGED_SCRIPTS / "use_archive.py"), ".", "cat.png"], tmp_path, check=False)
    assert folder.stderr.strip() == (". is not a trainyard model archive (missing model.onnx, labels.txt, "
                                     "mean.npy, preprocess.json, example.py)")


def test_the_script_environment_cannot_import_trainyard(tmp_path):
    result = run_isolated(["-c", "import trainyard"], tmp_path, check=False)
    assert result.returncode != 0 and "No module named 'trainyard'" in result.stderr
    ok = run_isolated(["-c", "import numpy, PIL, onnxruntime; print('ok')"], tmp_path)
    assert ok.stdout.strip() == "ok"


def test_scripts_match_the_server_on_every_validation_image(trained, tmp_path_factory):
    """The issue's measure: download, unpack, run both scripts; same top-1, probabilities 1e-4."""
    from fastapi.testclient import TestClient

    from trainyard.web.app import create_app

    with TestClient(create_app(trained.settings, run_scheduler=False)) as client:
        response = client.get(f"/api/models/{trained.model_id}/download")
    assert response.status_code == 200, response.text
    fresh = tmp_path_factory.mktemp("fresh")
    archive = fresh / "model.tar.gz"
    archive.write_bytes(response.content)
    top = unpack(archive, fresh / "unpacked")
    images = [str(p) for p in trained.val_images]
    assert len(images) == 18  # 6 per class

    checkpoint = checkpoint_for_epoch(trained.ctx.manager.folder(trained.model_id).path)
    classes = classes_of(checkpoint)
    server = server_probabilities(checkpoint, trained.val_images)
    by_archive = script_json(["use_archive.py", archive, *images, "--batch-size", "5"], top)
    by_files = script_json(["example.py", "model.onnx", *images, "-l", "labels.txt", "-m", "mean.npy",
                            "-p", "preprocess.json", "--batch-size", "4"], top)
    by_folder = script_json(["use_archive.py", ".", *images], top)  # the unpacked archive, from inside it
    for predictions in (by_archive, by_files, by_folder):
        scripts = as_matrix(predictions, images, classes)
        assert list(scripts.argmax(1)) == list(server.argmax(1))
        np.testing.assert_allclose(scripts, server, atol=1e-4, rtol=0)
        assert [p[0][0] for p in predictions.values()] == [classes[i] for i in server.argmax(1)]
    _also_matches_inference_classify(checkpoint, trained.val_images, by_files, classes)


def _also_matches_inference_classify(checkpoint, images, predictions, classes):
    """The server's own classify module (when present) agrees too."""
    classify = pytest.importorskip("trainyard.inference.classify")
    from trainyard.inference.loader import load_model

    loaded = load_model(checkpoint)
    decoded = [classify.decode(p.read_bytes(), loaded) for p in images]
    for path, server_top in zip(images, classify.classify(loaded, decoded, top=len(classes))):
        mine = dict(predictions[str(path)])
        assert server_top[0][0] == predictions[str(path)][0][0]
        for label, p in server_top:
            assert abs(mine[label] - p) <= 1e-4


@pytest.mark.parametrize("resize, channels, crop, mean_mode, size", [
    ("squash", 3, None, "image", (28, 28)),
    ("crop", 3, 24, "pixel", (30, 26)),
    ("fill", 3, 24, "image", (28, 28)),
    ("half_crop", 1, None, "none", (32, 24)),
    ("fill", 1, 20, "pixel", (26, 30)),
])
def test_each_resize_mode_through_the_scripts(tmp_path, resize, channels, crop, mean_mode, size):
    """Wide, tall, exact-size, RGBA, palette and 16-bit images, in every resize mode."""
    job = make_checkpoint_job(tmp_path / "job", resize=resize, channels=channels, size=size, crop=crop,
                              mean_mode=mean_mode)
    archive = export_model(job, None, tmp_path / "model.tar.gz").path
    top = unpack(archive, tmp_path / "unpacked")
    images = odd_images(tmp_path / "images")
    names = [str(p) for p in images]
    checkpoint = checkpoint_for_epoch(job)
    classes = classes_of(checkpoint)
    server = server_probabilities(checkpoint, images)
    assert server.max(1).mean() > 0.5  # confident: a preprocessing slip would move these
    runs = [["example.py", "model.onnx", *names, "-l", "labels.txt", "-m", "mean.npy",
             "-p", "preprocess.json", "--top", "4", "--batch-size", "3"]]
    if resize == "fill":  # use_archive.py runs example.py's code: once is enough to show it
        runs.append(["use_archive.py", archive, *names, "--top", "4"])
    for args in runs:
        np.testing.assert_allclose(as_matrix(script_json(args, top), names, classes), server,
                                   atol=1e-5, rtol=0)


def test_example_prints_the_top_five_like_digits(tmp_path):
    """Human output: a header per image, then 'confidence% - "label"' lines, best first."""
    job = make_checkpoint_job(tmp_path / "job")
    archive = export_model(job, None, tmp_path / "model.tar.gz").path
    top = unpack(archive, tmp_path / "unpacked")
    image = odd_images(tmp_path / "images")[0]
    shutil.copy(image, top / "cat.jpg")
    out = run_isolated(["example.py", "model.onnx", "cat.jpg", "-l", "labels.txt", "-m", "mean.npy",
                        "-p", "preprocess.json", "--cpu"], top).stdout
    lines = out.splitlines()
    assert "Prediction for cat.jpg" in lines[0]
    ranked = [float(line.split("%")[0]) for line in lines[1:5]]
    assert ranked == sorted(ranked, reverse=True) and len(lines[1:5]) == 4  # only 4 classes
    assert lines[1].endswith('"') and ' - "' in lines[1]


def test_example_without_preprocess_json_assumes_squash_and_the_mean(tmp_path):
    """DIGITS's example took just the model, labels and mean: that still works for squash."""
    job = make_checkpoint_job(tmp_path / "job", resize="squash", crop=24)
    archive = export_model(job, None, tmp_path / "model.tar.gz").path
    top = unpack(archive, tmp_path / "unpacked")
    images = odd_images(tmp_path / "images")[:3]
    names = [str(p) for p in images]
    predictions = script_json(["example.py", "model.onnx", *names, "-l", "labels.txt", "-m", "mean.npy"], top)
    checkpoint = checkpoint_for_epoch(job)
    np.testing.assert_allclose(as_matrix(predictions, names, classes_of(checkpoint)),
                               server_probabilities(checkpoint, images), atol=1e-5, rtol=0)
