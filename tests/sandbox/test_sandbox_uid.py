"""As root, with TRAINYARD_SANDBOX_UID, sandboxed user code runs as that unprivileged uid: a file
only root may read stays closed to it even where Landlock would let it read, while a file
anyone may read opens. (Without the setting root keeps its uid and loses every capability.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from trainyard.sandbox import policy as sandbox

pytestmark = [pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock"),
              pytest.mark.skipif(os.geteuid() != 0, reason="the uid is dropped only by root")]
NOBODY = 65534


@pytest.fixture
def files():
    # Not under pytest's own temporary folder, which only root may walk through.
    folder = Path(tempfile.mkdtemp(prefix="trainyard-uid-test-"))
    folder.chmod(0o755)  # the uid may walk to its files; only their own modes decide
    (folder / "secret").write_text("root's\n")
    (folder / "secret").chmod(0o600)
    (folder / "public").write_text("anyone's\n")
    (folder / "public").chmod(0o644)
    yield folder
    shutil.rmtree(folder)


def run_as_sandboxed(files, uid: str | None) -> list[str]:
    policy = sandbox.Policy(read=[str(files)], processes=True)  # the shell forks
    env = {k: v for k, v in os.environ.items() if k != "TRAINYARD_SANDBOX_UID"}
    if uid:
        env["TRAINYARD_SANDBOX_UID"] = uid
    script = f"id -u; cat {files}/secret 2>/dev/null || echo refused; cat {files}/public"
    out = subprocess.run([sys.executable, "-m", "trainyard.sandbox.enter", policy.to_json(), "--", "/bin/sh", "-c",
                          script], capture_output=True, text=True, env=env, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_with_a_sandbox_uid_user_code_runs_as_it_and_cannot_read_roots_files(files):
    assert run_as_sandboxed(files, str(NOBODY)) == [str(NOBODY), "refused", "anyone's"]


def test_without_one_root_keeps_its_uid_and_landlock_decides(files):
    assert run_as_sandboxed(files, None) == ["0", "root's", "anyone's"]
