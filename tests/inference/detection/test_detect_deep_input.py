"""``trainyard detect`` given 16-bit PNGs: a detector is 8-bit, so each is scaled to 8 bits
(value * 255 / 65535, rounded) and gets the boxes its 8-bit twin gets (docs/images.md)."""

from __future__ import annotations

import json

import numpy as np
import png
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.detection_data import draw_image, shapes_truth
from tests.detection_model import CLASSES
from trainyard.cli.main import app

SIZE = (192, 176)  # test_detect.py's: twice the stored size, letterboxed by pad


def test_detect_answers_a_16bit_png_as_its_8bit_twin(detector, tmp_path):
    rng = np.random.default_rng(3)
    paths = []
    for i, shapes in enumerate(shapes_truth(5, SIZE, tuple(CLASSES), seed=99)[1:]):
        pixels = draw_image(shapes, SIZE, tuple(CLASSES), rng)
        Image.fromarray(pixels).save(tmp_path / f"{i}.png")
        # rounds back to ``pixels``; its high byte (Pillow's reading) is often one less
        deep = np.clip(pixels.astype(np.int64) * 257 - 100, 0, 65535).astype(np.uint16)
        png.from_array(deep.reshape(pixels.shape[0], -1), "RGB;16").save(str(tmp_path / f"{i}-16.png"))
        paths += [tmp_path / f"{i}.png", tmp_path / f"{i}-16.png"]
    result = CliRunner().invoke(app, ["detect", detector.model_id, *map(str, paths), "--json"], env=detector.env())
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    assert all("error" not in r for r in results)
    eights, sixteens = results[0::2], results[1::2]
    assert sum(len(r["boxes"]) for r in eights) >= 3  # something to compare
    for eight, sixteen in zip(eights, sixteens):
        assert [b["label"] for b in sixteen["boxes"]] == [b["label"] for b in eight["boxes"]]
        for mine, theirs in zip(sixteen["boxes"], eight["boxes"]):
            assert mine["box"] == pytest.approx(theirs["box"], abs=1e-3)
            assert mine["score"] == pytest.approx(theirs["score"], abs=1e-5)
