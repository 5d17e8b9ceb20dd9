"""Import checks sizes before the expensive step: a labels.txt of 200,000 classes is refused
from the weights' shapes, before a network for 200,000 classes is built (+280 MiB before)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from tests.inference.deploy_helpers import unpack
from trainyard.inference import archive_import
from trainyard.inference.archive_import import ArchiveImportError, read_model_archive


def test_labels_that_no_layer_fits_are_refused_before_building(client, trained, tmp_path, monkeypatch):
    download = client.get(f"/api/models/{trained.model_id}/download")
    assert download.status_code == 200, download.text
    (tmp_path / "a.tar.gz").write_bytes(download.content)
    top = unpack(tmp_path / "a.tar.gz", tmp_path / "unpacked")
    (top / "labels.txt").write_text("".join(f"class{i}\n" for i in range(200_000)))
    hostile = tmp_path / "hostile.tar.gz"
    with tarfile.open(hostile, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    built: list[int] = []
    # Neither built here nor checked in a child (where a standard network is built for shapes)
    monkeypatch.setattr("trainyard.artifact.network.create_model", lambda *a, **k: built.append(1))
    monkeypatch.setattr(archive_import, "state_shapes", lambda *a, **k: built.append(1))
    with pytest.raises(ArchiveImportError, match="200000 classes"):
        read_model_archive(hostile, tmp_path / "work")
    assert built == []


def test_the_real_archive_still_imports(client, trained, tmp_path: Path):
    download = client.get(f"/api/models/{trained.model_id}/download")
    (tmp_path / "a.tar.gz").write_bytes(download.content)
    checkpoint = read_model_archive(tmp_path / "a.tar.gz", tmp_path / "work")
    assert checkpoint["classes"] == trained.classes
