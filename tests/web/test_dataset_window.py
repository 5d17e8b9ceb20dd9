"""A 16-bit dataset's images on its page: stretched to full contrast by default, over the
window the user sets (``min`` and ``max`` on the image route), and a bad window is refused."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def served(client, url: str) -> np.ndarray:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return np.asarray(Image.open(io.BytesIO(response.content)))


def test_a_16bit_dataset_is_shown_through_a_window(client, settings, wait_job):
    folder = settings.data_roots[0] / "window"
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        (folder / name).mkdir(parents=True)
        for i in range(4):  # values 1000..3000: all would be <= 12 scaled by 255 / 65535
            ramp = rng.permutation(np.linspace(1000, 3000, 16 * 16)).reshape(16, 16)
            Image.fromarray(ramp.astype(np.uint16)).save(folder / name / f"{i}.png")
    response = client.post("/api/datasets", json={"name": "window", "train_folder": str(folder),
                                                  "width": 16, "height": 16, "val_percent": 25})
    job = wait_job(client, response.json()["id"])
    assert job["status"] == "done" and job["depth"] == 16, job
    url = f"/api/datasets/{job['id']}/images/train/0.png"

    own = served(client, url)  # each image from its own minimum to its maximum
    assert own.min() <= 5 and own.max() >= 250
    assert client.get(url).headers["X-Display-Window"] == "1000-3000"

    wide = served(client, url + "?min=0&max=6000")  # 1000..3000 is the 2nd and 3rd sixth
    assert 40 <= wide.min() <= 45 and 125 <= wide.max() <= 130
    assert client.get(url + "?min=0&max=6000").headers["X-Display-Window"] == "0-6000"
    narrow = served(client, url + "?min=1500&max=2500")  # clipped outside the window
    assert (narrow == 0).mean() > 0.2 and (narrow == 255).mean() > 0.2

    for bad, words in (("?min=3000&max=1000", "must be below its max"), ("?min=2000&max=2000", "must be below"),
                       ("?min=1000", "both min and max"), ("?min=-1&max=10", "min"), ("?min=0&max=70000", "max")):
        refused = client.get(url + bad)
        assert refused.status_code == 422 and words in refused.text, (bad, refused.text)

    page = client.get(f"/datasets/{job['id']}").text
    assert 'id="explore-min"' in page and 'id="explore-max"' in page
    assert "Window: each image from its own minimum" in page
