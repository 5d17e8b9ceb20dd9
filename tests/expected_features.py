"""Under CI, a sandbox or namespace test that skips for want of a feature this machine offers fails.

The tests in tests/sandbox and tests/cluster skip where the machine lacks what they test
(bubblewrap namespaces, Landlock, root, PostgreSQL, ip netns, nftables), judged by the code under
test (``namespaces.available()``, ``sandbox.status()``). A bug there would skip them everywhere,
silently; so where ``CI=true`` each skip's reason is matched against probes that do not use
trainyard's code, and a skip for a feature the machine does offer becomes a failure.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path

# The folders whose skips are checked.
CHECKED_FOLDERS = ("sandbox", "cluster")


@cache
def _bubblewrap() -> bool:
    """bwrap can make a process's namespaces here (the binary alone is not enough in a container)."""
    if shutil.which("bwrap") is None:
        return False
    run = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True, timeout=30)
    return run.returncode == 0


@cache
def _landlock() -> bool:
    lsm = Path("/sys/kernel/security/lsm")
    return lsm.exists() and "landlock" in lsm.read_text().split(",")


def _root() -> bool:
    return os.geteuid() == 0


def _postgres() -> bool:
    return bool(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or shutil.which("initdb") is not None


def _netns() -> bool:
    return _root() and shutil.which("ip") is not None


def _nftables() -> bool:
    return _root() and shutil.which("nft") is not None


# Words of a skip's reason -> the probe of the feature it says is missing. A reason that names
# none of them (no CUDA, the cluster extra not installed) stays a skip.
FEATURES: dict[str, tuple[str, Callable[[], bool]]] = {
    "namespaces": ("bubblewrap namespaces", _bubblewrap), "bubblewrap": ("bubblewrap namespaces", _bubblewrap),
    "landlock": ("Landlock", _landlock), "root": ("root", _root), "postgresql": ("PostgreSQL", _postgres),
    "ip netns": ("ip netns", _netns), "nftables": ("nftables", _nftables), "nft": ("nftables", _nftables),
}


def offered_but_skipped(reason: str) -> str | None:
    """The feature a skip's reason says is missing while this machine offers it; None otherwise."""
    lowered = reason.lower()
    for word, (feature, offered) in FEATURES.items():
        if word in lowered and offered():
            return feature
    return None


def checked(path: Path, tests_root: Path) -> bool:
    """Whether a test file's skips are checked: under CI, in one of CHECKED_FOLDERS."""
    under = path.relative_to(tests_root).parts[:1]
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") and bool(under) and under[0] in CHECKED_FOLDERS
