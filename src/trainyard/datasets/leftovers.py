"""What a dataset build leaves if it is killed (``kill -9``): its ``dataset.tmp`` and
``extract.tmp`` folders and its shared-memory ring in /dev/shm. The ring is named after the
job, so whoever finishes the dead job (the next manager) can find and remove all three; a
``dataset.tmp`` with a resume checkpoint stays, for ``trainyard dataset resume``.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from trainyard.core.paths import job_id_of

SHM_DIR = Path("/dev/shm")  # where Linux keeps POSIX shared memory as files
RESUME_FILE = "resume.json"  # the checkpoint datasets/resume_state.py writes in dataset.tmp


def shm_prefix(job_dir: Path) -> str:
    """The start of the name of every shared-memory block a build of this job makes (``job_dir``:
    its folder or its work folder)."""
    return f"trainyard-{job_id_of(job_dir)}-"


def new_shm_name(job_dir: Path) -> str:
    return f"{shm_prefix(job_dir)}{os.getpid()}-{secrets.token_hex(4)}"


def remove_build_leftovers(job_dir: Path, keep_resumable: bool = True) -> list[str]:
    """Remove a finished (or dead) build's temporary folders and shared memory; return what went.

    ``keep_resumable``: leave a ``dataset.tmp`` that holds a resume checkpoint.
    """
    job_dir = Path(job_dir)
    removed = []
    for name in ("dataset.tmp", "extract.tmp"):
        if name == "dataset.tmp" and keep_resumable and (job_dir / name / RESUME_FILE).is_file():
            continue
        if (job_dir / name).exists():
            shutil.rmtree(job_dir / name, ignore_errors=True)
            removed.append(name)
    if SHM_DIR.is_dir():
        for block in SHM_DIR.glob(shm_prefix(job_dir) + "*"):
            try:
                block.unlink()
                removed.append(str(block))
            except OSError:
                pass  # gone already, or another user's: nothing to free here
    return removed
