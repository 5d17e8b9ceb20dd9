"""Image generators shared by the dataset tests (imported by name: tests/datasets is on sys.path),
and a build job process run (killed, for resume tests) with the files it leaves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image


def save_image(path: Path, array: np.ndarray, **save_args) -> Path:
    """Save an (H, W) or (H, W, 3) uint8 array; the format follows the suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, **save_args)
    return path


def random_image(rng: np.random.Generator, height: int = 24, width: int = 40) -> np.ndarray:
    return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)


def make_class_tree(root: Path, counts: dict[str, int], seed: int = 0,
                    size: tuple[int, int] = (40, 24)) -> dict[Path, np.ndarray]:
    """Write ``counts[name]`` random PNGs under root/name; return {path: pixels}."""
    rng = np.random.default_rng(seed)
    written = {}
    for name, n in counts.items():
        for i in range(n):
            pixels = random_image(rng, size[1], size[0])
            written[save_image(root / name / f"{name}_{i:03d}.png", pixels)] = pixels
    return written


def run_build(job: Path, kill_at: int | None = None) -> int:
    """Exit code of the dataset job process on ``job``, SIGKILLed after image ``kill_at`` if given."""
    from trainyard.datasets.build_stream import KILL_AT_ENV

    env = {k: v for k, v in os.environ.items() if k != KILL_AT_ENV}
    if kill_at is not None:
        env[KILL_AT_ENV] = str(kill_at)
    return subprocess.run([sys.executable, "-m", "trainyard.datasets.run", str(job)], env=env,
                          capture_output=True, timeout=600).returncode


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
