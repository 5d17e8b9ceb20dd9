"""``trainyard dataset create`` on a folder of 16-bit PNGs: 16 bits with no option needed
(issue 45's interface), said in the JSON document."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from trainyard.cli.main import app


def test_a_folder_of_16bit_pngs_builds_at_16_bits_with_no_option(tmp_path):
    data = tmp_path / "data"
    rng = np.random.default_rng(0)
    for name, level in (("dim", 1000), ("bright", 3000)):
        (data / "deep" / name).mkdir(parents=True)
        for i in range(4):
            Image.fromarray((level + rng.integers(0, 50, (10, 10))).astype(np.uint16)).save(
                data / "deep" / name / f"{i}.png")
    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(data), "TRAINYARD_AUTH_TOKEN": ""}
    result = CliRunner().invoke(app, ["dataset", "create", "--name", "deep", "--train-folder", str(data / "deep"),
                                      "--size", "8x8", "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["status"], doc["depth"], doc["channels"]) == ("done", 16, 1)
