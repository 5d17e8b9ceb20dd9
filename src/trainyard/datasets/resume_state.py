"""What makes a killed build resumable: ``dataset.tmp/resume.json``, written every second or so.

It records how far the stream of new images got (``position``: images handled, kept or
skipped), each split writer's checkpoint (images and bytes written, the file of the mean sum),
the images skipped while decoding so far, and a fingerprint of the plan. A build that finds a
checkpoint with the same fingerprint reopens the writers at their checkpoint (bytes written
after it are cut off), skips the first ``position`` images and goes on: the noise of every
image is seeded by its place in the plan, so the result is byte-identical to a build that was
never interrupted. Anything else (no file, another plan, a damaged file) starts afresh.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from trainyard.core.files import write_json_atomic
from trainyard.datasets.leftovers import RESUME_FILE as FILE


@dataclass
class ResumeState:
    position: int
    writers: dict[str, dict]
    skipped: list[dict]  # {path, reason} of images the decode refused, in plan order


def fingerprint(spec_json: str, geometry: object, digests: dict[str, str]) -> str:
    """One hash of the spec, the geometry and every split's paths and labels."""
    h = hashlib.sha256(spec_json.encode())
    h.update(repr(geometry).encode())
    h.update(json.dumps(digests, sort_keys=True).encode())
    return h.hexdigest()


def save(tmp: Path, plan_hash: str, state: ResumeState) -> None:
    write_json_atomic(tmp / FILE, {"fingerprint": plan_hash, "position": state.position,
                                   "writers": state.writers, "skipped": state.skipped})


def load(tmp: Path, plan_hash: str) -> ResumeState | None:
    """The checkpoint of an interrupted build of this very plan, or None."""
    try:
        doc = json.loads((tmp / FILE).read_text())
        if doc["fingerprint"] != plan_hash:
            return None
        return ResumeState(int(doc["position"]), dict(doc["writers"]), list(doc["skipped"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def resumable(job_dir: Path) -> bool:
    """Whether the job's folder holds an interrupted build to resume."""
    return (Path(job_dir) / "dataset.tmp" / FILE).is_file()
