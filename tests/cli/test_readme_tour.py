"""The README tour's first ``train`` command, run as the README writes it, learns: on a small
set of flower-like photos (tests/tour_images.py) every run of its sweep ends well above chance.
It once gave a chance-level model (SGD at --lr 0.001 for ten epochs of a few hundred images)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tour_images import KINDS, make_flowers

README = Path(__file__).resolve().parents[2] / "README.md"
SRC = Path(__file__).resolve().parents[2] / "src"


def tour_train_options() -> list[str]:
    """The options of the README tour's first ``trainyard train --dataset ID ...`` command."""
    command = re.search(r"^\s+\.venv/bin/trainyard train --dataset ID (.+)$", README.read_text(), re.MULTILINE)
    assert command, "the README tour has no `trainyard train --dataset ID ...` command"
    return shlex.split(command.group(1))


def trainyard(cli_env: dict, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args, "--json"], capture_output=True,
                          text=True, env=os.environ | cli_env | {"PYTHONPATH": str(SRC)}, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_readme_tours_train_command_learns_well_above_chance(settings, cli_env):
    images = make_flowers(settings.data_roots[0] / "flowers", per_class=80)
    dataset = trainyard(cli_env, "dataset", "create", "--name", "flowers", "--train-folder", str(images),
                        "--size", "64x64")
    jobs = trainyard(cli_env, "train", "--dataset", dataset["id"], *tour_train_options())["jobs"]
    chance = 100 / len(KINDS)
    assert len(jobs) >= 1 and all(job["status"] == "done" for job in jobs), [j["error"] for j in jobs]
    best = {job["id"]: (job["best"] or {}).get("val_accuracy", 0.0) for job in jobs}
    assert all(accuracy >= chance + 15 for accuracy in best.values()), best  # chance: 33.3 %
