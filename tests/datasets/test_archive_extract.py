"""safe_extract: good archives unpack; hostile members are refused by name."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from trainyard.datasets.archive import ArchiveError, safe_extract


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tf:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tf.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                tf.addfile(info, io.BytesIO(member[1]))
    return path


def test_zip_with_single_top_folder_returns_it(tmp_path: Path):
    archive = make_zip(tmp_path / "a.zip", {"photos/cat/1.png": b"x", "photos/dog/2.png": b"yy",
                                            "__MACOSX/photos/._1.png": b"junk"})
    root = safe_extract(archive, tmp_path / "out")
    assert root == tmp_path / "out" / "photos"
    assert (root / "dog" / "2.png").read_bytes() == b"yy"
    assert not (tmp_path / "out" / "__MACOSX").exists()


@pytest.mark.parametrize("mode, name", [("w:gz", "a.tar.gz"), ("w", "a.tar"), ("w:gz", "a.tgz")])
def test_tar_with_several_top_entries_returns_dest(tmp_path: Path, mode: str, name: str):
    archive = make_tar(tmp_path / name, [("cat/1.png", b"x"), ("./dog/2.png", b"y")], mode)
    root = safe_extract(archive, tmp_path / "out")
    assert root == tmp_path / "out"
    assert (root / "cat" / "1.png").read_bytes() == b"x"


@pytest.mark.parametrize("name", ["/etc/evil.png", "cat/../../evil.png", "..\\evil.png", "C:/evil.png"])
def test_zip_refuses_escaping_names(tmp_path: Path, name: str):
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zipfile.ZipInfo(name), b"x")
    with pytest.raises(ArchiveError, match="evil.png"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "evil.png").exists()


@pytest.mark.parametrize("name", ["/tmp/evil.png", "a/../../evil.png"])
def test_tar_refuses_escaping_names(tmp_path: Path, name: str):
    archive = make_tar(tmp_path / "a.tar.gz", [("ok/1.png", b"x"), (name, b"x")])
    with pytest.raises(ArchiveError, match="evil.png"):
        safe_extract(archive, tmp_path / "out")


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE])
def test_tar_refuses_links_and_devices(tmp_path: Path, kind: bytes):
    info = tarfile.TarInfo("cat/link.png")
    info.type = kind
    info.linkname = "/etc/passwd"
    archive = make_tar(tmp_path / "a.tar", [info], "w")
    with pytest.raises(ArchiveError, match="link.png"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "cat" / "link.png").exists()


def test_zip_refuses_symlink_member(tmp_path: Path):
    archive = tmp_path / "a.zip"
    info = zipfile.ZipInfo("cat/link.png")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveError, match="link.png.*symbolic link"):
        safe_extract(archive, tmp_path / "out")


def test_size_and_member_limits(tmp_path: Path):
    archive = make_zip(tmp_path / "a.zip", {"a/1.png": b"x" * 600, "a/2.png": b"x" * 600})
    with pytest.raises(ArchiveError, match="more than 1000 bytes"):
        safe_extract(archive, tmp_path / "o1", max_total_bytes=1000)
    with pytest.raises(ArchiveError, match="more than 1 members"):
        safe_extract(archive, tmp_path / "o2", max_members=1)


def test_not_an_archive(tmp_path: Path):
    (tmp_path / "x.zip").write_bytes(b"this is not a zip")
    with pytest.raises(ArchiveError, match="not a zip or tar"):
        safe_extract(tmp_path / "x.zip", tmp_path / "out")
