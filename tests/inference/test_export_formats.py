"""Export formats (issue 44): each archive's copy is checked against PyTorch on the validation
split, its script runs with its runtime alone and answers as the check measured, and a format
that cannot be shipped is refused with nothing written."""

from __future__ import annotations

import importlib
import importlib.util
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.inference.deploy_helpers import run_isolated, script_json, unpack
from trainyard.cli.main import app as cli
from trainyard.datasets.storage import open_split
from trainyard.inference.exporters import FORMATS, FormatRefused, exporter, figures, torchscript
from trainyard.inference.exporters.archive import export_format
from trainyard.inference.exporters.base import ort_runner

# Those built here whose runtime is installed (openvino, executorch, coreml are optional extras) and
# that run here, so are checked here (Core ML runs on macOS only: its Linux export is tested apart).
INSTALLED = [name for name, e in FORMATS.items()
             if e.runtime and all(importlib.util.find_spec(m) for m in e.runtime) and e.runs_here()]
# The copy in an unpacked archive, run here: {its file: runner of the archive folder}.
RUNNERS = {"model.onnx": lambda top: ort_runner((top / "model.onnx").read_bytes()),
           "model.pt": lambda top: torchscript.runner((top / "model.pt").read_bytes()),
           "model.xml": lambda top: _openvino_runner(top),
           "model.pte": lambda top: _runner_of("executorch_pte", top / "model.pte"),
           "model.mlpackage.zip": lambda top: _runner_of("coreml_package", top / "model.mlpackage.zip")}


def _openvino_runner(top: Path):
    from trainyard.inference.exporters import openvino_ir

    return openvino_ir.runner((top / "model.xml").read_bytes(), (top / "model.bin").read_bytes())


def _runner_of(module: str, copy: Path):
    """The runner of an optional format's module (imported only where its runtime is installed)."""
    return importlib.import_module(f"trainyard.inference.exporters.{module}").runner(copy.read_bytes())


def _job_dir(trained) -> Path:
    return trained.ctx.manager.folder(trained.model_id).path


@pytest.fixture(scope="module", params=INSTALLED)
def exported(request, trained, tmp_path_factory):
    out = tmp_path_factory.mktemp("formats") / f"{request.param}.tar.gz"
    return export_format(_job_dir(trained), None, exporter(request.param), out, calibration_images=32)


def test_the_manifest_holds_the_check_against_pytorch(exported):
    manifest = exported.manifest
    assert manifest["check_data"] == "val" and manifest["images"] == 18  # the whole validation split
    assert manifest["top1_agreement"] >= 0.95 and abs(manifest["accuracy_drop"]) <= 2.0
    assert manifest["accuracy"] > 60  # three colours, learnable in three epochs
    assert 0 < manifest["size_bytes"] and 0 < manifest["reference_size_bytes"]
    assert manifest["latency_ms"] > 0 and manifest["reference_latency_ms"] > 0
    assert exported.members[-1].endswith("/manifest.json")


def test_int8_is_a_smaller_copy(trained, exported):
    if exported.manifest["precision"] == "fp16":  # half the weights, and a little of its own
        assert exported.manifest["size_bytes"] < 0.6 * exported.manifest["reference_size_bytes"]
        return
    if exported.manifest["export_format"] != "onnx-int8":
        assert abs(exported.manifest["size_bytes"] / exported.manifest["reference_size_bytes"] - 1) < 0.05  # fp32
        return
    assert exported.manifest["size_bytes"] < 0.5 * exported.manifest["reference_size_bytes"]
    assert exported.manifest["layout"] == "QOperator" and exported.manifest["calibration_images"] == 32


def test_the_archive_script_answers_as_the_check_measured(trained, exported, tmp_path):
    """The validation images at their stored size (so the script's resize keeps them), through the
    archive's own script in a Python that has numpy, Pillow and onnxruntime but not trainyard."""
    dataset = trained.ctx.manager.folder(trained.dataset_id).dataset
    pixels = open_split(dataset, "val").read_batch(np.arange(8))
    names = []
    for i, image in enumerate(pixels):
        Image.fromarray(image).save(tmp_path / f"v{i}.png")
        names.append(f"v{i}.png")
    top = unpack(exported.path, tmp_path / "unpacked")
    assert f"This copy: {exported.manifest['export_format']}" in (top / "README.md").read_text()
    answers = script_json([top / "use_archive.py", str(top), *names], tmp_path)
    scripted = [answers[name][0][0] for name in names]
    inputs, _ = figures.split_inputs(_checkpoint(trained), "val", 8)
    (name,) = set(RUNNERS) & {p.name for p in top.iterdir()}
    copy = RUNNERS[name](top)(inputs).argmax(1)
    assert scripted == [trained.classes[i] for i in copy]


def _checkpoint(trained) -> dict:
    from trainyard.artifact.checkpoint import checkpoint_for_epoch, load_checkpoint

    return load_checkpoint(checkpoint_for_epoch(_job_dir(trained)))


def test_cli_json_answers_the_figures(trained, tmp_path):
    out = tmp_path / "int8.tar.gz"
    result = CliRunner().invoke(cli, ["export", trained.model_id, "--format", "onnx-int8", "--output", str(out),
                                      "--calibration-images", "16", "--json"], env=trained.env())
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["export_format"] == "onnx-int8" and 0.95 <= doc["top1_agreement"] <= 1
    assert doc["size_bytes"] < doc["reference_size_bytes"] and doc["bytes"] == out.stat().st_size


def test_an_int8_copy_beyond_tolerance_is_refused_and_nothing_written(trained, tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "MIN_INT8_AGREEMENT", 1.01)  # no copy can agree that well
    out = tmp_path / "int8.tar.gz"
    with pytest.raises(FormatRefused, match="too far from PyTorch.*agreement.*nothing was written"):
        export_format(_job_dir(trained), None, exporter("onnx-int8"), out, calibration_images=16)
    assert not out.exists() and not list(tmp_path.iterdir())
    forced = export_format(_job_dir(trained), None, exporter("onnx-int8"), out, calibration_images=16, force=True)
    assert forced.manifest["forced"] is True and out.is_file()


def test_missing_runtimes_and_unknown_formats_are_refused(trained, tmp_path, monkeypatch):
    from trainyard.inference.exporters import base

    monkeypatch.setattr(base.importlib.util, "find_spec", lambda name: None)  # nothing installed
    result = CliRunner().invoke(cli, ["export", trained.model_id, "--format", "onnx-int8", "-o",
                                      str(tmp_path / "x.tar.gz")], env=trained.env())
    assert result.exit_code == 2 and "not installed" in result.output and "pip install" in result.output
    monkeypatch.undo()
    for fmt, words in (("tflite", "LiteRT"), ("tensorrt", "NVIDIA GPU"), ("nope", "unknown export format")):
        result = CliRunner().invoke(cli, ["export", trained.model_id, "--format", fmt, "-o",
                                          str(tmp_path / "x.tar.gz")], env=trained.env())
        assert result.exit_code == 2 and words in result.output, result.output
    assert not (tmp_path / "x.tar.gz").exists()


@pytest.mark.parametrize(("fmt", "extra"), [("executorch", "trainyard[executorch]"), ("coreml", "trainyard[coreml]"),
                                            ("coreml-fp16", "trainyard[coreml]")])
def test_an_optional_format_without_its_package_is_refused_naming_its_extra(trained, tmp_path, monkeypatch, fmt,
                                                                               extra):
    """Whether or not the package is installed here: hidden, the refusal names the extra to install."""
    from trainyard.inference.exporters import base

    hidden = set(FORMATS[fmt].runtime)
    real = base.importlib.util.find_spec
    monkeypatch.setattr(base.importlib.util, "find_spec", lambda name: None if name in hidden else real(name))
    out = tmp_path / "x.tar.gz"
    result = CliRunner().invoke(cli, ["export", trained.model_id, "--format", fmt, "-o", str(out)], env=trained.env())
    assert result.exit_code == 2 and "not installed" in result.output, result.output
    assert f"pip install '{extra}'" in " ".join(result.output.split())
    assert not out.exists() and not list(tmp_path.iterdir())


def test_coreml_off_apple_machines_converts_and_says_it_was_not_checked(trained, tmp_path):
    """Core ML runs only on macOS: elsewhere the package is written with its size, the manifest says
    it was not checked (and no agreement), and the archive's script says where it runs."""
    pytest.importorskip("coremltools")
    from trainyard.inference.exporters import coreml_package

    if coreml_package.runs_here():
        pytest.skip("a Mac checks Core ML as the other formats (the tests above)")
    out = tmp_path / "coreml.tar.gz"
    result = CliRunner().invoke(cli, ["export", trained.model_id, "--format", "coreml", "-o", str(out), "--json"],
                                env=trained.env())
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["checked"] is False and "Apple" in doc["not_checked_because"]
    assert "top1_agreement" not in doc and "latency_ms" not in doc  # nothing claimed that was not measured
    assert doc["size_bytes"] > 0 and doc["precision"] == "fp32"
    assert abs(doc["size_bytes"] / doc["reference_size_bytes"] - 1) < 0.5  # fp32 weights, a package's own files
    top = unpack(out, tmp_path / "unpacked")
    assert "NOT checked against PyTorch" in (top / "README.md").read_text()
    assert json.loads((top / "manifest.json").read_text())["checked"] is False
    with zipfile.ZipFile(top / "model.mlpackage.zip") as package:
        assert "model.mlpackage/Manifest.json" in package.namelist()
    shown = CliRunner().invoke(cli, ["export", trained.model_id, "--format", "coreml-fp16", "-o",
                                     str(tmp_path / "fp16.tar.gz")], env=trained.env())
    assert shown.exit_code == 0 and "NOT checked against PyTorch" in shown.output, shown.output
    image = tmp_path / "v.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(image)
    script = run_isolated([top / "use_archive.py", str(top), str(image)], tmp_path, check=False)
    assert script.returncode != 0 and "only on Apple machines" in script.stderr
