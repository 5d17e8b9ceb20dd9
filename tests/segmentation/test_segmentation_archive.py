"""A segmenter's archive: ``trainyard export`` ships the ONNX graph with use_archive.py, which
writes, without trainyard or PyTorch, the index PNG that ``trainyard segment`` writes."""

from __future__ import annotations

import subprocess
import sys
import tarfile

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.segmentation_data import shapes
from tests.segmentation_model import trained_segmenter
from trainyard.cli.main import app

pytestmark = pytest.mark.slow  # shares the trained segmenter (tests/segmentation_model.py)


def test_the_archive_script_writes_the_masks_segment_writes(tmp_path_factory, tmp_path):
    trained = trained_segmenter(tmp_path_factory)
    archive = tmp_path / "model.tar.gz"
    result = CliRunner().invoke(app, ["export", trained.model_id, "--output", str(archive)], env=trained.env())
    assert result.exit_code == 0, result.output
    with tarfile.open(archive) as tar:
        names = {m.name.rsplit("/", 1)[-1] for m in tar}
    assert {"model.onnx", "preprocess.json", "labels.txt", "use_archive.py", "README.md"} <= names
    script = tmp_path / "use_archive.py"
    with tarfile.open(archive) as tar:
        member = next(m for m in tar if m.name.endswith("/use_archive.py"))
        script.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    rng = np.random.default_rng(3)
    images = []
    for i, size in enumerate([(64, 64), (90, 70), (50, 80)]):
        image, _ = shapes(rng, 64)
        path = tmp_path / f"img{i}.png"
        Image.fromarray(image).resize(size, Image.Resampling.BILINEAR).save(path)
        images.append(str(path))
    run = subprocess.run([sys.executable, str(script), str(archive), *images, "--output", str(tmp_path / "onnx")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    served = CliRunner().invoke(app, ["segment", trained.model_id, *images, "--output", str(tmp_path / "torch")],
                                env=trained.env())
    assert served.exit_code == 0, served.output
    for i, size in enumerate([(64, 64), (90, 70), (50, 80)]):
        onnx, torch_mask = Image.open(tmp_path / "onnx" / f"img{i}.png"), Image.open(tmp_path / "torch" / f"img{i}.png")
        assert onnx.size == size and np.array_equal(np.array(onnx), np.array(torch_mask))
