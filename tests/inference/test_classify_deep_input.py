"""``trainyard classify`` of the shared 8-bit model given 16-bit PNGs: each is scaled to 8 bits
(value * 255 / 65535, rounded) and answered as its 8-bit twin is (docs/images.md)."""

from __future__ import annotations

import json

import numpy as np
import png
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.trained_model import colour_image
from trainyard.cli.main import app


def as_16bit(pixels: np.ndarray) -> np.ndarray:
    """16-bit values that round to ``pixels`` at 8 bits but whose high byte is often one less
    (x * 257 - 100): reading them by the high byte, as Pillow does, would change the answer."""
    return np.clip(pixels.astype(np.int64) * 257 - 100, 0, 65535).astype(np.uint16)


@pytest.fixture(scope="module")
def twins(trained, tmp_path_factory):
    """(8-bit PNG, 16-bit colour PNG) of one fresh image per class, and (8-bit, 16-bit) grey
    PNGs of the dark one (clipped at 255 instead of scaled, it would read as white)."""
    folder = tmp_path_factory.mktemp("deep-input")
    pairs = []
    for name in trained.classes:
        pixels = np.asarray(colour_image(name, 40))
        eight, sixteen = folder / f"{name}.png", folder / f"{name}-16.png"
        colour_image(name, 40).save(eight)
        png.from_array(as_16bit(pixels).reshape(pixels.shape[0], -1), "RGB;16").save(str(sixteen))
        pairs.append((eight, sixteen))
    grey = np.asarray(colour_image("dark", 41).convert("L"))
    colour_image("dark", 41).convert("L").save(folder / "grey.png")
    Image.fromarray(as_16bit(grey)).save(folder / "grey-16.png")  # "I;16"
    pairs.append((folder / "grey.png", folder / "grey-16.png"))
    return pairs


def test_an_8bit_model_answers_a_16bit_png_as_its_8bit_twin(trained, twins):
    paths = [str(p) for pair in twins for p in pair]
    result = CliRunner().invoke(app, ["classify", trained.model_id, *paths, "--top", "3", "--json"],
                                env=trained.env())
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    for name, eight, sixteen in zip([*trained.classes, "dark"], results[0::2], results[1::2]):
        assert "error" not in sixteen and sixteen["predictions"][0][0] == name
        assert [label for label, _ in sixteen["predictions"]] == [label for label, _ in eight["predictions"]]
        assert [s for _, s in sixteen["predictions"]] == pytest.approx([s for _, s in eight["predictions"]], abs=1e-6)
