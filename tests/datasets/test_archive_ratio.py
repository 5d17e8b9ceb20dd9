"""A zip bomb is refused by its expansion ratio before it fills the disk (1 MB wrote 1 GiB)."""

from __future__ import annotations

import zipfile

import pytest

from trainyard.datasets import archive as archive_module
from trainyard.datasets.archive import ArchiveError, safe_extract


def _bomb(path, megabytes: int) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("cat/zeros.bmp", bytes(megabytes * 2**20))


def test_an_archive_that_expands_over_the_ratio_is_refused_early(tmp_path, monkeypatch):
    monkeypatch.setattr(archive_module, "RATIO_FLOOR", 2**20)  # keep the test's bomb small
    bomb = tmp_path / "bomb.zip"
    _bomb(bomb, 64)  # 64 MiB of zeros deflate to ~64 KiB: a ratio of ~1000
    with pytest.raises(ArchiveError, match="unpacks to more than"):
        safe_extract(bomb, tmp_path / "out")
    written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert written <= archive_module.MAX_RATIO * bomb.stat().st_size + archive_module.CHUNK


def test_an_ordinary_archive_of_images_still_unpacks(tmp_path, make_images):
    make_images(tmp_path / "imgs")
    archive = tmp_path / "imgs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in (tmp_path / "imgs").rglob("*.jpg"):
            zf.write(path, path.relative_to(tmp_path / "imgs"))
    root = safe_extract(archive, tmp_path / "out")
    assert len(list(root.rglob("*.jpg"))) == 20
