"""Exporting a model: what the archive holds, the ONNX check, reproducibility and refusals."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from datetime import datetime
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file
from typer.testing import CliRunner

from tests.inference.deploy_helpers import make_checkpoint_job, unpack
from trainyard.artifact.checkpoint import (
    CheckpointError,
    build_model_from_checkpoint,
    checkpoint_for_epoch,
    load_checkpoint,
)
from trainyard.cli.main import app as cli
from trainyard.inference import export_documents, onnx_export
from trainyard.inference.export import export_model
from trainyard.networks import load_network_source

MEMBERS = ["README.md", "info.json", "preprocess.json", "labels.txt", "mean.npy", "mean.png", "model.onnx",
           "weights.safetensors", "network.py", "example.py", "use_archive.py"]


@pytest.fixture(scope="module")
def downloaded(client, trained, tmp_path_factory) -> Path:
    response = client.get(f"/api/models/{trained.model_id}/download")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/gzip"
    assert 'filename="deploy-epoch-3.tar.gz"' in response.headers["content-disposition"]
    path = tmp_path_factory.mktemp("download") / "model.tar.gz"
    path.write_bytes(response.content)
    return path


def test_the_archive_holds_every_file_in_order(downloaded):
    with tarfile.open(downloaded) as tar:
        names = tar.getnames()
    assert names == ["deploy-epoch-3"] + [f"deploy-epoch-3/{name}" for name in MEMBERS]


def test_preprocess_and_info_describe_the_model(downloaded, trained, tmp_path):
    top = unpack(downloaded, tmp_path)
    prep = json.loads((top / "preprocess.json").read_text())
    assert {k: prep[k] for k in ("width", "height", "channels", "resize", "mean_mode", "crop", "scale",
                                 "channel_order", "noise_seed")} == {
        "width": 28, "height": 28, "channels": 3, "resize": "half_crop", "mean_mode": "image", "crop": 24,
        "scale": "0..1", "channel_order": "RGB", "noise_seed": 0}
    assert prep["input"]["shape"] == ["batch", 3, 24, 24]
    info = json.loads((top / "info.json").read_text())
    assert info["job"]["id"] == trained.model_id and info["job"]["name"] == "deploy"
    assert info["dataset"] == {"id": trained.dataset_id, "name": "colours"}
    assert info["epoch"] == 3 and info["network"] == "lenet"
    assert set(info["metrics"]) >= {"val_accuracy", "val_loss", "train_loss"}
    assert set(info["versions"]) >= {"trainyard", "torch", "onnx", "onnxruntime", "numpy", "python"}
    datetime.fromisoformat(info["created"])
    assert info["onnx_check"]["max_abs_diff"] <= 1e-4
    for name, digest in info["sha256"].items():
        assert hashlib.sha256((top / name).read_bytes()).hexdigest() == digest
    assert (top / "labels.txt").read_text().splitlines() == ["dark", "light", "red"]


def test_mean_files_are_the_dataset_mean(downloaded, trained, tmp_path):
    top = unpack(downloaded, tmp_path)
    dataset_mean = np.load(trained.ctx.manager.folder(trained.dataset_id).dataset / "mean.npy")
    mean = np.load(top / "mean.npy", allow_pickle=False)
    assert mean.dtype == np.float32 and mean.shape == (28, 28, 3)
    np.testing.assert_array_equal(mean, dataset_mean.astype(np.float32))
    png = np.asarray(Image.open(top / "mean.png"))
    assert png.shape == (28, 28, 3) and np.abs(png - mean).max() <= 0.5


def test_onnx_has_a_dynamic_batch_and_safetensors_reload_in_pytorch(downloaded, trained, tmp_path):
    top = unpack(downloaded, tmp_path)
    graph = onnx.load(top / "model.onnx").graph
    onnx.checker.check_model(onnx.load(top / "model.onnx"))
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    build = load_network_source((top / "network.py").read_text())
    model = build(3, 3, 24)
    model.load_state_dict(load_file(top / "weights.safetensors"))
    original = build_model_from_checkpoint(load_checkpoint(
        checkpoint_for_epoch(trained.ctx.manager.folder(trained.model_id).path)))
    x = torch.rand(2, 3, 24, 24)
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(x), original(x), rtol=0, atol=0)


def test_any_snapshot_downloads_and_missing_ones_are_refused(client, trained):
    first = client.get(f"/api/models/{trained.model_id}/download", params={"epoch": 1})
    assert first.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(first.content)) as tar:
        info = json.load(tar.extractfile("deploy-epoch-1/info.json"))
    assert info["epoch"] == 1
    missing = client.get(f"/api/models/{trained.model_id}/download", params={"epoch": 7})
    assert missing.status_code == 404
    assert "no checkpoint for epoch 7" in missing.json()["detail"] and "1, 2, 3" in missing.json()["detail"]
    assert client.get("/api/models/nope/download").status_code == 404
    assert client.get(f"/api/models/{trained.dataset_id}/download").status_code == 404  # a dataset


def test_a_model_without_snapshot_is_refused(client, trained):
    job = trained.ctx.manager.create("model", "not yet", {}, needs={"pool": "cpu"})
    response = client.get(f"/api/models/{job.id}/download")
    assert response.status_code == 404 and "no checkpoint yet" in response.json()["detail"]


def test_archive_is_reproducible(tmp_path, monkeypatch):
    """Same epoch, same bytes: only info.json's creation time may differ (here it is pinned)."""
    job = make_checkpoint_job(tmp_path / "job", crop=24, resize="fill")
    a = export_model(job, None, tmp_path / "a.tar.gz").path
    b = export_model(job, 1, tmp_path / "b.tar.gz").path
    assert _members(a).keys() == _members(b).keys()
    for name, data in _members(a).items():
        if name.endswith("info.json"):
            doc_a, doc_b = json.loads(data), json.loads(_members(b)[name])
            doc_a.pop("created"), doc_b.pop("created")
            assert doc_a == doc_b
        else:
            assert data == _members(b)[name], name
    raw = a.read_bytes()
    assert raw[4:8] == b"\0\0\0\0"  # gzip mtime 0
    mtime = int(checkpoint_for_epoch(job).stat().st_mtime)
    with tarfile.open(a) as tar:
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in tar} == {(mtime, 0, 0, "", "")}

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2030, 1, 1, tzinfo=tz)

    monkeypatch.setattr(export_documents, "datetime", Frozen)
    c = export_model(job, None, tmp_path / "c.tar.gz").path
    d = export_model(job, None, tmp_path / "d.tar.gz").path
    assert c.read_bytes() == d.read_bytes()


def test_an_archive_reuses_the_export_classify_cached_and_it_is_the_same_graph(tmp_path, monkeypatch):
    """Classify exported the snapshot already: the archive takes that graph (checked again for its
    figures) instead of exporting once more, and a fresh export gives the same bytes."""
    from trainyard.inference import ort_runtime
    from trainyard.inference.loader import load_model

    job = make_checkpoint_job(tmp_path / "job")
    snapshot = checkpoint_for_epoch(job)
    fresh = _members(export_model(job, None, tmp_path / "fresh.tar.gz").path)
    assert load_model(snapshot).cpu_forward() is not None  # classify's export, cached beside it

    def no_export(*args, **kwargs):
        raise AssertionError("exported again although classify's export is fresh")

    monkeypatch.setattr(onnx_export, "export_onnx", no_export)
    reused = _members(export_model(job, None, tmp_path / "reused.tar.gz").path)
    onnx_name = next(name for name in reused if name.endswith("model.onnx"))
    assert reused[onnx_name] == fresh[onnx_name] == ort_runtime.onnx_path(snapshot).read_bytes()


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def test_export_fails_with_the_figures_when_onnx_runtime_disagrees(tmp_path, monkeypatch):
    job = make_checkpoint_job(tmp_path / "job")
    model = build_model_from_checkpoint(load_checkpoint(checkpoint_for_epoch(job)))
    onnx_bytes = onnx_export.export_onnx(model, (3, 28, 28))
    with torch.no_grad():
        model.classifier[-1].bias.add_(0.01)  # PyTorch now answers differently
    with pytest.raises(onnx_export.ExportError, match=r"largest difference 0\.01.*allowed 0\.0001"):
        onnx_export.check_onnx(onnx_bytes, model, (3, 28, 28))
    monkeypatch.setattr(onnx_export, "ATOL", -1.0)  # nothing can pass
    with pytest.raises(onnx_export.ExportError, match="disagree"):
        export_model(job, None, tmp_path / "refused.tar.gz")
    assert not (tmp_path / "refused.tar.gz").exists()


def test_adaptive_pools_onnx_lacks_are_exported_exactly():
    """LeNet at 24x24 pools 3x3 to 4x4: not expressible as ONNX pooling, done with matrices."""
    from trainyard.artifact.network import create_model

    model = create_model("lenet", None, 5, 1, 24).eval()
    x = onnx_export.sample_inputs((1, 24, 24), 3, seed=5)
    swapped = onnx_export.exportable(model, x)
    assert swapped is not model and model.pool.__class__.__name__ == "AdaptiveAvgPool2d"
    with torch.no_grad():
        torch.testing.assert_close(swapped(x), model(x), rtol=1e-5, atol=1e-6)
    assert onnx_export.exportable(create_model("lenet", None, 5, 1, 28).eval(),
                                  onnx_export.sample_inputs((1, 28, 28), 2, seed=0)).pool.__class__ \
        .__name__ == "AdaptiveAvgPool2d"  # 4 -> 4 needs no change


def test_cli_export(trained, tmp_path):
    env = {"TRAINYARD_HOME": str(trained.settings.home), "TRAINYARD_AUTH_TOKEN": "",
           "TRAINYARD_DATA_ROOTS": str(trained.settings.data_roots[0])}
    out = tmp_path / "cli.tar.gz"
    result = CliRunner().invoke(cli, ["export", trained.model_id, "--epoch", "2", "--output", str(out),
                                      "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["epoch"] == 2 and doc["bytes"] == out.stat().st_size and Path(doc["path"]) == out
    with gzip.open(out) as f:
        assert f.read(1)  # a gzip file
    missing = CliRunner().invoke(cli, ["export", trained.model_id, "--epoch", "9", "-o", str(tmp_path / "x")],
                                 env=env)
    assert missing.exit_code == 2 and "no checkpoint for epoch 9" in missing.output
    unknown = CliRunner().invoke(cli, ["export", "nope", "-o", str(tmp_path / "x")], env=env)
    assert unknown.exit_code == 2 and "no model" in unknown.output


def test_checkpoint_error_for_the_python_api(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint yet"):
        export_model(tmp_path, None, tmp_path / "x.tar.gz")
