"""The folders every sandboxed Python process reads: the interpreter's, its packages' and the system's.

Shared by the namespaces (sandbox/namespaces.py: what is bound read-only into the fresh root) and
Landlock (sandbox/policy.py: what may be read inside it), so the two layers agree.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from trainyard.core import environment

SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/opt")
KERNEL = ("/proc", "/sys", "/dev")  # a namespace gets its own /proc and /dev; /sys read-only


def python_roots() -> set[str]:
    """The interpreter's folders, and the package folders on sys.path and PYTHONPATH: never the
    working folder ``python -m`` puts first, which may well hold TRAINYARD_HOME."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    chosen = set(environment.python_path())
    roots.update(p for p in sys.path if os.path.isabs(p) and os.path.isdir(p)
                 and (p in chosen or os.path.basename(p) in ("site-packages", "dist-packages")))
    roots.add(str(Path(__file__).resolve().parents[2]))  # trainyard's own source (src/)
    return {r for r in roots if r and r != "/"}


def system_read_roots() -> list[str]:
    """Folders every Python process needs to read: the interpreter's and the system's."""
    return sorted(python_roots() | set(SYSTEM) | set(KERNEL))
