"""Importing a downloaded archive as a model: classify with it, fine-tune from it, refusals."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from tests.inference.deploy_helpers import (
    make_checkpoint_job,
    server_probabilities,
    unpack,
)
from trainyard.artifact.checkpoint import checkpoint_for_epoch, load_checkpoint
from trainyard.cli.main import app as cli
from trainyard.inference.export import export_model
from trainyard.jobs.kinds.imported import import_model_archive
from trainyard.jobs.runs.manager import JobError
from trainyard.networks import network_source


@pytest.fixture(scope="module")
def archive(client, trained, tmp_path_factory) -> Path:
    response = client.get(f"/api/models/{trained.model_id}/download")
    assert response.status_code == 200, response.text
    path = tmp_path_factory.mktemp("import") / "deploy-epoch-3.tar.gz"
    path.write_bytes(response.content)
    return path


def upload(client, data: bytes, filename: str = "model.tar.gz", **form):
    return client.post("/api/models/import", files={"file": (filename, data, "application/gzip")}, data=form)


def test_evaluating_an_imported_model_is_a_409_that_says_it_has_no_dataset(client, archive):
    imported = upload(client, archive.read_bytes(), name="no dataset here")
    assert imported.status_code == 201, imported.text
    response = client.post(f"/api/models/{imported.json()['id']}/evaluate", json={"split": "val"})
    assert response.status_code == 409  # was a 500 (the spec has no dataset folder)
    assert "no dataset here (it was imported)" in response.json()["detail"]


def test_import_gives_a_done_model_with_the_same_answers(client, trained, archive, tmp_path):
    response = upload(client, archive.read_bytes(), name="imported")
    assert response.status_code == 201, response.text
    doc = response.json()
    assert (doc["kind"], doc["status"], doc["name"], doc["network"]) == ("model", "done", "imported", "lenet")
    assert doc["snapshots"] == [3] and doc["dataset"] is None and doc["metrics"]["val_accuracy"]
    assert not any(trained.settings.uploads_dir.iterdir())  # the upload is not kept
    folder = trained.ctx.manager.folder(doc["id"]).path
    original = checkpoint_for_epoch(trained.ctx.manager.folder(trained.model_id).path)
    imported = checkpoint_for_epoch(folder)
    np.testing.assert_array_equal(server_probabilities(imported, trained.val_images),
                                  server_probabilities(original, trained.val_images))
    # Exported again, it is the same model: same ONNX graph, same weights.
    again = client.get(f"/api/models/{doc['id']}/download")
    assert again.status_code == 200
    first, second = unpack(archive, tmp_path / "a"), _unpack_bytes(again.content, tmp_path / "b")
    for name in ("model.onnx", "weights.safetensors", "preprocess.json", "labels.txt", "mean.npy"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def _unpack_bytes(data: bytes, dest: Path) -> Path:
    path = dest.with_suffix(".tar.gz")
    path.write_bytes(data)
    return unpack(path, dest)


def test_weights_come_from_safetensors_only(trained, archive, tmp_path):
    """model.onnx is not needed and never read; the imported weights are the safetensors file's."""
    top = unpack(archive, tmp_path / "x")
    (top / "model.onnx").unlink()
    weights = load_file(top / "weights.safetensors")
    weights["classifier.3.bias"] = torch.tensor([5.0, -5.0, 0.5])
    save_file(weights, top / "weights.safetensors")
    job = import_model_archive(trained.ctx, _repack(top, tmp_path / "edited.tar.gz"))
    checkpoint = load_checkpoint(checkpoint_for_epoch(trained.ctx.manager.folder(job.id).path))
    assert checkpoint["model"]["classifier.3.bias"].tolist() == [5.0, -5.0, 0.5]
    assert job.name.startswith("deploy (imported") and job.status == "done"

    (top / "weights.safetensors").write_bytes(b"not safetensors at all")
    with pytest.raises(JobError, match="weights.safetensors cannot be read"):
        import_model_archive(trained.ctx, _repack(top, tmp_path / "broken.tar.gz"))


def test_weights_that_do_not_fit_are_refused(trained, archive, tmp_path):
    top = unpack(archive, tmp_path / "x")
    (top / "labels.txt").write_text("a\nb\nc\nd\n")  # four classes, weights for three
    before = set(trained.settings.jobs_dir.iterdir())
    # Refused before anything is built: labels.txt alone says how many outputs the weights need.
    with pytest.raises(JobError, match=r"labels.txt names 4 classes but no layer in weights.safetensors"):
        import_model_archive(trained.ctx, _repack(top, tmp_path / "misfit.tar.gz"))
    assert set(trained.settings.jobs_dir.iterdir()) == before  # nothing left behind


def test_cli_import(trained, archive):
    env = {"TRAINYARD_HOME": str(trained.settings.home), "TRAINYARD_AUTH_TOKEN": "",
           "TRAINYARD_DATA_ROOTS": str(trained.settings.data_roots[0])}
    result = CliRunner().invoke(cli, ["import", str(archive), "--name", "from cli", "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["name"] == "from cli" and doc["status"] == "done" and doc["snapshots"] == [3]
    bad = CliRunner().invoke(cli, ["import", str(archive.parent / "missing.tar.gz")], env=env)
    assert bad.exit_code == 2 and "is not a file" in bad.output


def test_fine_tune_from_an_imported_model(trained, archive):
    from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs

    imported = import_model_archive(trained.ctx, archive, "base")
    request = TrainRequest(name="tuned", datasets=[trained.dataset_id], networks=["lenet"],
                           pretrained=imported.id,
                           settings={"epochs": 1, "batch_size": 12, "seed": 2, "crop": 24})
    [job] = create_model_jobs(trained.ctx, request, foreground=True)
    done = trained.ctx.manager.run_foreground(job.id, poll_s=0.05)
    assert done.status == "done", done.error
    log = trained.ctx.manager.folder(job.id).log.read_text()
    assert "pretrained: loaded 8 tensors" in log


def test_a_custom_network_archive_imports_as_custom(trained, tmp_path):
    """network.py that is not a standard network's file is kept as a custom network's source."""
    job = make_checkpoint_job(tmp_path / "job")
    checkpoint_path = checkpoint_for_epoch(job)
    checkpoint = load_checkpoint(checkpoint_path)
    checkpoint.update(network=None, network_source=network_source("lenet") + "\n# edited by hand\n")
    torch.save(checkpoint, checkpoint_path)
    archive = export_model(job, None, tmp_path / "custom.tar.gz").path
    imported = import_model_archive(trained.ctx, archive)
    rebuilt = load_checkpoint(checkpoint_for_epoch(trained.ctx.manager.folder(imported.id).path))
    assert rebuilt["network"] is None and rebuilt["network_source"].endswith("# edited by hand\n")
    assert rebuilt["preprocess"]["mean"].shape == (28, 28, 3)


def _tar(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                tar.addfile(info, io.BytesIO(member[1]))
    return buffer.getvalue()


def _link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


@pytest.mark.parametrize("members, reason", [
    ([("model/labels.txt", b"a\nb\n"), ("../evil.txt", b"gotcha")], "'..' component"),
    ([("/tmp/trainyard-evil.txt", b"gotcha")], "absolute path"),
    ([_link("model/weights.safetensors", "/etc/passwd")], "is a link"),
])
def test_archives_reaching_outside_their_folder_are_refused(client, trained, members, reason, tmp_path):
    before = (set(trained.settings.jobs_dir.iterdir()), len(client.get("/api/models").json()["models"]))
    response = upload(client, _tar(members))
    assert response.status_code == 400 and reason in response.json()["detail"], response.text
    assert "archive refused" in response.json()["detail"]
    after = (set(trained.settings.jobs_dir.iterdir()), len(client.get("/api/models").json()["models"]))
    assert after == before
    assert not (trained.settings.jobs_dir.parent / "evil.txt").exists()
    assert not Path("/tmp/trainyard-evil.txt").exists()


def test_other_uploads_are_refused_with_a_reason(client):
    response = upload(client, b"just some text", filename="notes.txt")
    assert response.status_code == 400 and "not a zip or tar archive" in response.json()["detail"]
    response = upload(client, _tar([("model/labels.txt", b"a\nb\n")]))
    assert response.status_code == 400 and "weights.safetensors" in response.json()["detail"]
    assert "missing" in response.json()["detail"]


def _repack(folder: Path, out: Path) -> Path:
    with tarfile.open(out, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return out
