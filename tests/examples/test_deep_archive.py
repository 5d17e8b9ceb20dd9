"""A 16-bit, 5-channel model's archive reads TIFFs at full depth and answers as the server does."""

from __future__ import annotations

import json

import numpy as np
import tifffile
import torch

from tests.inference.deploy_helpers import as_matrix, classes_of, make_checkpoint_job, script_json, unpack
from trainyard.artifact.checkpoint import build_model_from_checkpoint, checkpoint_for_epoch, load_checkpoint
from trainyard.artifact.normalize import preprocess_images
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference.classify import load_for
from trainyard.inference.export import export_model

STD = (0.01, 0.02, 0.03, 0.015, 0.05)


def reference(checkpoint_path, images) -> np.ndarray:
    """The server's preprocessing (load_for, preprocess_images) and the PyTorch network."""
    checkpoint = load_checkpoint(checkpoint_path)
    prep = Preprocessing.of_checkpoint(checkpoint)
    batch = preprocess_images([load_for(p, prep) for p in images], prep)
    with torch.no_grad():
        return torch.softmax(build_model_from_checkpoint(checkpoint)(batch), dim=1).numpy()


def test_archive_of_a_16bit_5_channel_model_matches_the_server(tmp_path):
    job = make_checkpoint_job(tmp_path / "job", channels=5, size=(28, 28), crop=24, depth=16, std=STD,
                              mean_mode="pixel", resize="fill")
    archive = export_model(job, None, tmp_path / "model.tar.gz").path
    top = unpack(archive, tmp_path / "unpacked")
    prep = json.loads((top / "preprocess.json").read_text())
    assert (prep["depth"], prep["channels"], prep["std"]) == (16, 5, list(STD))
    rng = np.random.default_rng(3)
    images = []
    for i, (h, w) in enumerate([(28, 28), (40, 17), (13, 50)]):
        path = tmp_path / "images" / f"band{i}.tif"
        path.parent.mkdir(exist_ok=True)
        tifffile.imwrite(path, rng.integers(0, 65535, (h, w, 5), dtype=np.uint16), photometric="minisblack",
                         planarconfig="contig")
        images.append(path)
    checkpoint = checkpoint_for_epoch(job)
    server = reference(checkpoint, images)
    names = [str(p) for p in images]
    scripts = as_matrix(script_json(["use_archive.py", archive, *names], top), names, classes_of(checkpoint))
    assert list(scripts.argmax(1)) == list(server.argmax(1))
    np.testing.assert_allclose(scripts, server, atol=1e-4, rtol=0)


def test_archive_of_a_16bit_rgb_model_reads_png_tiff_and_8bit_files_as_the_server(tmp_path):
    import png
    from PIL import Image

    job = make_checkpoint_job(tmp_path / "job", channels=3, size=(26, 30), depth=16, std=STD[:3], resize="crop")
    archive = export_model(job, None, tmp_path / "model.tar.gz").path
    top = unpack(archive, tmp_path / "unpacked")
    rng = np.random.default_rng(4)
    folder = tmp_path / "images"
    folder.mkdir()
    rgba = rng.integers(0, 65535, (21, 33, 4), dtype=np.uint16)
    with open(folder / "deep.png", "wb") as f:
        png.Writer(33, 21, greyscale=False, alpha=True, bitdepth=16).write(f, rgba.reshape(21, -1).tolist())
    tifffile.imwrite(folder / "deep.tif", rng.integers(0, 65535, (40, 19, 3), dtype=np.uint16), photometric="rgb")
    Image.fromarray(rng.integers(0, 256, (30, 30, 3), dtype=np.uint8)).save(folder / "eight.png")
    Image.fromarray(rng.integers(0, 65535, (25, 27), dtype=np.uint16)).save(folder / "grey16.png")
    images = sorted(folder.iterdir())
    checkpoint = checkpoint_for_epoch(job)
    server = reference(checkpoint, images)
    names = [str(p) for p in images]
    scripts = as_matrix(script_json(["use_archive.py", archive, *names], top), names, classes_of(checkpoint))
    assert list(scripts.argmax(1)) == list(server.argmax(1))
    np.testing.assert_allclose(scripts, server, atol=1e-4, rtol=0)
