"""A classify-many job of a custom model runs its network confined, as the store's record of the
model says (issue 28 point 2: an inference spec has no network_source, and such jobs used to
build the user's network unconfined): it works, and its build() cannot read the store."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.inference.test_isolation import BUILD, CHANNELS, CLASSES, PREPROCESS, SIZE, benign_state
from trainyard.artifact.checkpoint import save_checkpoint
from trainyard.core.paths import checkpoint_name
from trainyard.sandbox import policy as sandbox

PROBE = """import os
reached = "blocked"
try:
    open(os.path.join({home!r}, "trainyard.db"), "rb").close()
    reached = "reached"
except OSError:
    pass
if os.path.isfile(os.path.join("..", "spec.json")):  # the inference job's work folder (its working directory)
    with open("reach.txt", "w") as f:
        f.write(reached)"""


@pytest.mark.skipif(not sandbox.status()["available"], reason="this kernel offers no sandbox")
def test_a_classify_many_job_of_a_custom_model_is_confined_and_works(settings, client_for, wait_job):
    images = settings.data_roots[0] / "images"
    images.mkdir(parents=True)
    for i in range(3):
        Image.fromarray(np.full((SIZE, SIZE, 3), 60 * i, np.uint8)).save(images / f"{i}.png")
    source = BUILD.format(hostile="\n".join("    " + line for line in PROBE.format(home=str(settings.home))
                                            .splitlines()))
    with client_for(settings) as client:
        manager = client.app.state.ctx.manager
        model = manager.create("model", "custom", {"kind": "model", "network_source": source}, needs={"pool": "cpu"})
        client.app.state.ctx.store.update_job(model.id, status="done")
        save_checkpoint(manager.folder(model.id).checkpoints / checkpoint_name(1), {
            "model": benign_state(), "network": None, "network_source": source, "classes": CLASSES,
            "image_size": SIZE, "epoch": 1, "spec": {}, "preprocess": {**PREPROCESS, "mean": None},
            "channels": CHANNELS})
        answer = client.post(f"/api/models/{model.id}/classify-many", json={"path": str(images)})
        assert answer.status_code == 201, answer.text
        job = wait_job(client, answer.json()["id"], 300)
        assert job["status"] == "done", client.get(f"/api/jobs/{job['id']}/log").text
        reach = manager.folder(job["id"]).work / "reach.txt"
        assert reach.read_text() == "blocked", "the custom network read the store from its inference job"
