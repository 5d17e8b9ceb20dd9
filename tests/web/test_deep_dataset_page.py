"""A folder of 16-bit PNGs built through the API: its document and page say 16-bit, and its
images are shown with a min/max window (a dim 12-bit image is not left black)."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def test_a_16bit_dataset_is_said_and_shown(client, settings, wait_job):
    folder = settings.data_roots[0] / "deep"
    rng = np.random.default_rng(0)
    for name, level in (("dim", 300), ("bright", 4000)):  # a 12-bit camera: all below 4096
        (folder / name).mkdir(parents=True)
        for i in range(4):
            pixels = (level + rng.integers(0, 60, (12, 12))).astype(np.uint16)
            Image.fromarray(pixels).save(folder / name / f"{i}.png")
    response = client.post("/api/datasets", json={"name": "deep", "train_folder": str(folder),
                                                  "width": 8, "height": 8, "val_percent": 25})
    assert response.status_code in (200, 201), response.text
    job = wait_job(client, response.json()["id"])
    assert job["status"] == "done", job
    assert (job["depth"], job["channels"]) == (16, 1)
    page = client.get(f"/datasets/{job['id']}").text
    assert "1 channel, 16-bit" in page
    shown = client.get(f"/api/datasets/{job['id']}/images/train/0.png")
    assert shown.status_code == 200
    pixels = np.asarray(Image.open(io.BytesIO(shown.content)))
    assert pixels.dtype == np.uint8 and pixels.min() == 0 and pixels.max() == 255  # stretched
