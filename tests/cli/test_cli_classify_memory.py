"""``trainyard classify`` streams: its peak memory with 5,000 images is within 1.2x of its peak
with 50 (a memory assertion on the command's own process, read from wait4's rusage).

The images are hard links to one 160x160 PNG (cheap to make, 75 KiB decoded each): a classify
that decoded every image before classifying any would hold ~370 MiB more at 5,000.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

CLI = "from trainyard.cli.main import app; app()"


def peak_rss_kib(args: list[str], env: dict) -> tuple[int, str]:
    """(peak RSS in KiB, stdout) of one CLI run in its own process."""
    proc = subprocess.Popen([sys.executable, "-c", CLI, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    return usage.ru_maxrss, out


@pytest.fixture(scope="module")
def tiny_images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    source = folder / "source.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (160, 160, 3), dtype=np.uint8)).save(source)
    paths = []
    for i in range(5000):
        paths.append(str(folder / f"{i:04d}.png"))
        os.link(source, paths[-1])
    return paths


def test_classify_memory_is_flat_in_the_number_of_images(trained, tiny_images):
    checkpoint = str(trained.ctx.manager.folder(trained.model_id).checkpoints / "epoch-0003.pt")
    env = {**os.environ, **trained.env()}
    peak_rss_kib(["classify", checkpoint, tiny_images[0]], env)  # exports the snapshot: a one-off cost
    small, out_small = peak_rss_kib(["classify", checkpoint, *tiny_images[:50], "--json"], env)
    large, out_large = peak_rss_kib(["classify", checkpoint, *tiny_images, "--json"], env)
    assert len(json.loads(out_small)["results"]) == 50
    assert len(json.loads(out_large)["results"]) == 5000
    assert large <= 1.2 * small, f"peak RSS {large} KiB at 5000 images vs {small} KiB at 50"
