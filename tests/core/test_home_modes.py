"""The home is its owner's alone: folders 0700, the database 0600, an old home tightened at start,
and the umask of a trainyard process 077 (022 as root, whose sandboxed uids read what it writes)."""

from __future__ import annotations

import os
import stat

import pytest

from trainyard.core import home
from trainyard.settings import Settings


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_home_is_closed_to_other_accounts(tmp_path):
    settings = Settings(home=tmp_path / "home")
    settings.ensure_dirs()
    for folder in (settings.home, settings.jobs_dir, settings.uploads_dir):
        assert _mode(folder) == 0o700, folder
    assert _mode(settings.home / "trainyard.db") == 0o600


def test_an_old_world_readable_home_is_tightened(tmp_path):
    old = tmp_path / "old"
    (old / "jobs").mkdir(parents=True)
    (old / "uploads").mkdir()
    for folder in (old, old / "jobs", old / "uploads"):
        folder.chmod(0o755)
    for name in ("trainyard.db", "trainyard.db-wal"):
        (old / name).write_bytes(b"")
        (old / name).chmod(0o644)
    Settings(home=old).ensure_dirs()
    assert [_mode(p) for p in (old, old / "jobs", old / "uploads")] == [0o700] * 3
    assert _mode(old / "trainyard.db") == 0o600 and _mode(old / "trainyard.db-wal") == 0o600


def test_the_database_keeps_its_mode_once_sqlite_writes_it(tmp_path):
    from trainyard.jobs.store.database import open_engine

    settings = Settings(home=tmp_path / "home")
    settings.ensure_dirs()
    with open_engine(settings.db_url).begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    assert _mode(settings.home / "trainyard.db") == 0o600


@pytest.mark.parametrize(("euid", "umask"), [(1000, 0o077), (0, 0o022)])
def test_a_trainyard_process_sets_its_umask(monkeypatch, tmp_path, euid, umask):
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    before = os.umask(0o022)
    try:
        home.restrict_process()
        assert os.umask(0o022) == umask
        if euid:  # a file a non-root server makes is its own alone
            os.umask(umask)
            (tmp_path / "spec.json").write_text("{}")
            assert _mode(tmp_path / "spec.json") == 0o600
    finally:
        os.umask(before)
