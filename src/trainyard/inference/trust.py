"""What this side recorded about a checkpoint, kept where the job's own code cannot write.

A job folder is written by the job, and a custom network's job runs user code: whatever lies
beside a checkpoint (the cached ``.onnx`` and ``.inputs.npz``) may be forged or stale. So the
verdicts that matter are kept in a ledger outside every job folder, keyed by the SHA-256 of the
checkpoint's bytes: which network the checkpoint holds (a standard name, or "custom", read from
the checkpoint itself) and the SHA-256 of the cached export and inputs this side wrote for it.
A cache file is used only when its hash is the one recorded for that very checkpoint; anything
else is ignored and rebuilt.

The ledger of a job's checkpoint (``HOME/jobs/<id>/checkpoints/epoch-N.pt``) is ``HOME/trust``,
which the sandbox gives no job write access to. A checkpoint elsewhere (a user's own file given
to the CLI) keeps its ledger in ``.trust`` beside it: no job writes there either.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from trainyard.core import jobfiles
from trainyard.core.files import write_json_atomic
from trainyard.core.paths import checkpoint_owner

log = logging.getLogger(__name__)
FOLDER = "trust"
CHUNK = 1 << 20


def digest(path: str | os.PathLike) -> str:
    """The SHA-256 of the file at ``path`` (hex), read in chunks."""
    sha = hashlib.sha256()
    path = Path(path)  # no link, no FIFO: a job may plant either in its folder (core/jobfiles.py)
    with os.fdopen(jobfiles.open_beneath(path.parent, path.name), "rb") as f:
        while chunk := f.read(CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ledger(checkpoint: str | os.PathLike) -> Path:
    """The ledger folder for ``checkpoint`` as the caller named it (links not followed: a job may
    make its ``checkpoints`` folder a link into a place it can write, the name it was given by
    the server still says which home it belongs to)."""
    path = Path(os.path.abspath(checkpoint))
    job = checkpoint_owner(path)  # HOME/jobs/<id>: the ledger is HOME's, out of every job's reach
    if job is not None:
        return job.parent.parent / FOLDER
    return path.parent / f".{FOLDER}"


def recall(checkpoint: str | os.PathLike, sha: str) -> dict:
    """What was recorded for the checkpoint whose bytes hash to ``sha`` ({} when nothing)."""
    try:
        record = json.loads((ledger(checkpoint) / f"{sha}.json").read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def remember(checkpoint: str | os.PathLike, sha: str, **facts: str) -> None:
    """Record ``facts`` for the checkpoint hashing to ``sha`` (merged with what is there).

    A process that may not write the ledger (a sandboxed worker) records nothing: logged, and
    the next process rebuilds what it would have trusted."""
    record = {**recall(checkpoint, sha), **facts}
    try:
        write_json_atomic(ledger(checkpoint) / f"{sha}.json", record)
    except OSError as exc:
        log.info("not recorded in the trust ledger (%s): %s", ledger(checkpoint), exc)
