"""An import bomb is refused while the archive streams, at the header that passes the bound,
before anything past it is unpacked or written: a 9.4 MB upload was refused only after the
server had unpacked 1.88 GB (131 s)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from trainyard.datasets.archive import ArchiveError, safe_extract
from trainyard.inference.archive_import import ArchiveImportError, read_model_archive

GIB = 2**30


class _Zeros(io.RawIOBase):
    """``size`` zero bytes, read in chunks: the bomb is made without 1 GiB in memory or on disk."""

    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """A model archive with 1 GiB of zeros (about 1 MB gzipped) in a member the unpacking skips
    (macOS's resource forks), which a stream still read through before this."""
    path = tmp_path_factory.mktemp("bomb") / "model.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("model/labels.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"a\n"))
        info = tarfile.TarInfo("__MACOSX/model/._weights.safetensors")
        info.size = GIB
        tar.addfile(info, _Zeros(GIB))
    assert path.stat().st_size < 8 * 2**20
    return path


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_a_model_archive_bomb_is_refused_before_it_is_unpacked(bomb, tmp_path):
    with pytest.raises(ArchiveImportError, match="unpacks to more than .*weights.safetensors"):
        read_model_archive(bomb, tmp_path / "work")
    assert sum(p.stat().st_size for p in _files(tmp_path / "work")) < 2**20


def test_a_bomb_in_a_dataset_upload_is_refused_at_its_header(bomb, tmp_path):
    with pytest.raises(ArchiveError, match="unpacks to more than"):
        safe_extract(bomb, tmp_path / "out")
    assert sum(p.stat().st_size for p in _files(tmp_path / "out")) < 2**20


def test_the_rest_import_refuses_the_bomb_and_leaves_nothing(client, trained, bomb):
    jobs_before = set(trained.settings.jobs_dir.iterdir())
    with bomb.open("rb") as f:
        answer = client.post("/api/models/import", files={"file": ("model.tar.gz", f, "application/gzip")})
    assert 400 <= answer.status_code < 500, answer.text
    assert "unpacks to more than" in answer.json()["detail"]
    assert set(trained.settings.jobs_dir.iterdir()) == jobs_before
    assert _files(trained.settings.uploads_dir) == []
