"""Exporting a weak detector (issue 41's mends): the check compares the boxes a user would see,
a disagreement can be forced through with its measured difference recorded, and `trainyard
export` of a detector ends with its summary line instead of a KeyError."""

from __future__ import annotations

import json
import tarfile

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.inference.detection.untrained import SIZE, make_detector_job
from trainyard.artifact.checkpoint import build_model_from_checkpoint, checkpoint_for_epoch, load_checkpoint
from trainyard.cli.main import app as cli
from trainyard.inference.detection import onnx_graph
from trainyard.inference.export import export_model
from trainyard.inference.onnx_export import ExportError


@pytest.fixture(scope="module")
def weak(tmp_path_factory):
    return make_detector_job(tmp_path_factory.mktemp("jobs") / "weak")


def _images(n=2):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8) for _ in range(n)]


def test_a_weak_detector_exports_its_confident_boxes_checked(weak, tmp_path):
    result = export_model(weak, None, tmp_path / "weak.tar.gz")  # refused before: near-zero scores disagreed
    assert result.check["min_score"] == 0.5 and "forced" not in result.check
    with tarfile.open(result.path) as tar:
        info = json.load(tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/info.json"))))
    assert info["onnx_check"]["min_score"] == 0.5


def test_a_disagreement_is_refused_unless_forced_and_then_recorded(weak):
    checkpoint = load_checkpoint(checkpoint_for_epoch(weak))
    model = build_model_from_checkpoint(checkpoint)
    graph = onnx_graph.export_detector(model, (3, SIZE, SIZE))
    # An untrained SSDlite scores every box about 1/3: compared from 0.3, its ties disagree.
    with pytest.raises(ExportError, match="disagree.*force"):
        onnx_graph.check_detector(graph, model, _images(), threshold=0.3)
    forced = onnx_graph.check_detector(graph, model, _images(), threshold=0.3, force=True)
    assert forced["forced"] and forced["unmatched_boxes"] > 0 and "no match" in forced["disagreement"]


def test_cli_export_of_a_detector_says_what_it_checked(weak, settings, ctx, tmp_path):
    from trainyard.jobs.kinds.imported import import_model_archive

    archive = export_model(weak, None, tmp_path / "weak.tar.gz").path
    job = import_model_archive(ctx, archive, "weak")  # a detector job in the CLI's store
    env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_AUTH_TOKEN": "",
           "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0])}
    out = tmp_path / "cli.tar.gz"
    plain = CliRunner().invoke(cli, ["export", job.id, "-o", str(out)], env=env)
    assert plain.exit_code == 0, plain.output  # was KeyError: 'max_abs_diff', exit 1
    assert "matches PyTorch" in plain.output and "boxes" in plain.output
    forced = CliRunner().invoke(cli, ["export", job.id, "-o", str(out), "--force", "--json"], env=env)
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.stdout)["onnx_check"]["forced"] is True
