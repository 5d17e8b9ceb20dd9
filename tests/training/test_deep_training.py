"""A 16-bit dataset trains on what only 16 bits hold: two classes whose values are all above 255
and 100 apart (1000 and 1100, the same noise), which an 8-bit read makes one grey either way
(Pillow's clip: 255 for both; a scale by 1/257: 4 for both)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
import tifffile
import torch
from model_helpers import metrics, model_spec, write_job
from typer.testing import CliRunner

from trainyard.artifact.preprocessing import Preprocessing
from trainyard.cli.main import app
from trainyard.core.events import EventWriter
from trainyard.core.paths import checkpoint_name
from trainyard.datasets.build import build_dataset
from trainyard.datasets.spec import DatasetSpec
from trainyard.training.run import main

LEVELS = {"dim": 1000, "bright": 1100}


def write_tiffs(folder: Path, per_class: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for name, level in LEVELS.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels = level + rng.integers(-28, 29, (16, 16))  # same spread, only the level differs
            tifffile.imwrite(folder / name / f"{i:03d}.tif", pixels.astype(np.uint16))


@pytest.fixture(scope="module")
def deep_dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("deep")
    write_tiffs(root / "images", 32)
    spec = DatasetSpec(name="deep", train_folder=str(root / "images"), width=16, height=16, val_percent=25)
    with EventWriter(root / "job") as events:
        info = build_dataset(spec, root / "job", events, workers=1)
    assert (info["depth"], info["channels"]) == (16, 1)
    # what makes the test: scaled to 8 bits, both classes are the same grey
    assert {round(v / 257) for v in (1000 - 28, 1000 + 28, 1100 - 28, 1100 + 28)} == {4}
    return root / "job" / "dataset"


@pytest.fixture(scope="module")
def trained_job(deep_dataset: Path, tmp_path_factory) -> Path:
    job = write_job(tmp_path_factory.mktemp("deep-model") / "job",
                    model_spec(deep_dataset, epochs=4, lr={"policy": "fixed", "base_lr": 0.01}))
    assert main(job) == 0
    return job


def test_classes_apart_only_above_255_train_above_chance(trained_job: Path):
    job = trained_job
    assert metrics(job, "val_accuracy")[-1][1] >= 90  # percent; chance is 50
    assert "per-channel std" in (job / "log.txt").read_text()
    prep = Preprocessing.of_checkpoint(torch.load(job / "checkpoints" / checkpoint_name(4), weights_only=False))
    assert prep.depth == 16 and prep.std is not None and prep.to_dict(with_mean=False)["depth"] == 16


def test_the_same_files_read_at_8_bits_stay_at_chance(tmp_path: Path):
    """The control: built with --depth 8, both classes become one grey and nothing can be learnt."""
    write_tiffs(tmp_path / "images", 32)
    spec = DatasetSpec(name="flat", train_folder=str(tmp_path / "images"), width=16, height=16, val_percent=25,
                       depth=8)
    with EventWriter(tmp_path / "ds") as events:
        assert build_dataset(spec, tmp_path / "ds", events, workers=1)["depth"] == 8
    job = write_job(tmp_path / "job", model_spec(tmp_path / "ds" / "dataset", epochs=4))
    assert main(job) == 0
    assert metrics(job, "val_accuracy")[-1][1] <= 60


def test_classify_reads_a_16bit_tiff_at_full_depth(trained_job: Path, tmp_path: Path):
    job = trained_job
    write_tiffs(tmp_path / "new", 3, seed=99)  # images the model never saw
    paths = sorted((tmp_path / "new").rglob("*.tif"))
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_AUTH_TOKEN": "",
           "TRAINYARD_DATA_ROOTS": str(tmp_path)}
    checkpoint = job / "checkpoints" / checkpoint_name(4)
    result = CliRunner().invoke(app, ["classify", str(checkpoint), *map(str, paths), "--json"], env=env)
    assert result.exit_code == 0, result.output
    answers = {r["image"]: r["predictions"][0][0] for r in json.loads(result.stdout)["results"]}
    assert answers == {str(p): p.parent.name for p in paths}


def test_a_five_band_tiff_dataset_trains_and_classifies(tmp_path: Path):
    """Classes told apart by one band of five (the others the same noise), as a sensor's would be."""
    rng = np.random.default_rng(5)
    for name, band in (("water", 1), ("field", 3)):
        (tmp_path / "images" / name).mkdir(parents=True)
        for i in range(24):
            pixels = rng.integers(20000, 20400, (16, 16, 5))
            pixels[:, :, band] += 600
            tifffile.imwrite(tmp_path / "images" / name / f"{i:02d}.tif", pixels.astype(np.uint16),
                             photometric="minisblack", planarconfig="contig")
    spec = DatasetSpec(name="bands", train_folder=str(tmp_path / "images"), width=16, height=16, val_percent=25)
    with EventWriter(tmp_path / "ds") as events:
        info = build_dataset(spec, tmp_path / "ds", events, workers=1)
    assert (info["depth"], info["channels"]) == (16, 5)
    job = write_job(tmp_path / "job", model_spec(tmp_path / "ds" / "dataset", epochs=4))
    assert main(job) == 0
    assert metrics(job, "val_accuracy")[-1][1] >= 90  # percent; chance is 50
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_AUTH_TOKEN": "", "TRAINYARD_DATA_ROOTS": str(tmp_path)}
    image = tmp_path / "images" / "field" / "00.tif"
    result = CliRunner().invoke(app, ["classify", str(job / "checkpoints" / checkpoint_name(4)), str(image),
                                      "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["predictions"][0][0] == "field"


def test_the_server_answers_an_uploaded_16bit_tiff_and_png_alike(trained_job: Path, tmp_path: Path):
    """The REST path (uploaded bytes, inference/responses.py) reads full depth too, TIFF or PNG."""
    from PIL import Image

    from trainyard.inference.loader import load_model
    from trainyard.inference.responses import answer

    loaded = load_model(trained_job / "checkpoints" / checkpoint_name(4))
    rng = np.random.default_rng(42)
    uploads = []
    for name, level in LEVELS.items():
        pixels = (level + rng.integers(-28, 29, (16, 16))).astype(np.uint16)
        tiff, png = tmp_path / f"{name}.tif", tmp_path / f"{name}.png"
        tifffile.imwrite(tiff, pixels)
        Image.fromarray(pixels).save(png)
        uploads += [(f"{name}.tif", tiff.read_bytes()), (f"{name}.png", png.read_bytes())]
    results = answer(loaded, uploads, top=2)["results"]
    assert [r["predictions"][0][0] for r in results] == ["dim", "dim", "bright", "bright"]
    assert results[0]["predictions"] == results[1]["predictions"]  # the same pixels, either format


def test_training_input_of_16bit_images_is_inference_input_to_the_bit():
    """The batch loader widens 16-bit samples to int32 for the device; the network must still get
    exactly what classify's numpy preprocessing gives (artifact/inputs.py)."""
    from trainyard.artifact.inputs import prepare_pixels
    from trainyard.artifact.normalize import normalize_batch, std_tensor

    batch = np.random.default_rng(0).integers(0, 65535, (3, 10, 10, 2), dtype=np.uint16)
    mean = torch.full((1, 2, 1, 1), 0.3)
    std = std_tensor([0.05, 0.2])
    trained = normalize_batch(torch.from_numpy(batch.astype(np.int32)), mean, 8, std=std).numpy()
    served = prepare_pixels(batch, 8, mean.numpy(), std.numpy()).inputs
    assert np.array_equal(trained, served)


def test_saliency_of_a_16bit_model_is_drawn_on_its_window(trained_job: Path, tmp_path: Path):
    """What a person sees next to the answer (the input, its saliency) is 8-bit, not wrapped."""
    from PIL import Image

    from trainyard.inference.classify import load_for, prepare
    from trainyard.inference.loader import load_model
    from trainyard.inference.responses import classify_named

    loaded = load_model(trained_job / "checkpoints" / checkpoint_name(4))
    write_tiffs(tmp_path / "new", 1, seed=7)
    image = load_for(sorted((tmp_path / "new").rglob("*.tif"))[0], loaded.preprocess)
    prepared = prepare(loaded, [image])
    assert prepared.pixels.dtype == np.uint8 and prepared.pixels.max() == 255
    [result] = classify_named(loaded, [("x.tif", image)], saliency=True)
    assert result["saliency"]["image"].startswith("data:image/png;base64,")
    assert Image.open(io.BytesIO(base64.b64decode(result["saliency"]["image"].split(",", 1)[1]))).mode == "RGB"
