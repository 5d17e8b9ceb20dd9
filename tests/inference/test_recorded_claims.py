"""A checkpoint's claim about its network is checked against the store's record of its job
(issue 28 point 2): a recorded custom model is never loaded in the server, and a checkpoint that
claims a standard network for it (or a custom one for a standard job) is a 409 with one line."""

from __future__ import annotations

import io

import pytest
import torch
from PIL import Image

from tests.inference.deploy_helpers import make_checkpoint_job
from trainyard.core.paths import JobFolder
from trainyard.inference import loader
from trainyard.jobs.store import confinement as confinement_record

SOURCE = "def build(num_classes, in_channels, image_size):\n    raise RuntimeError('never built here')\n"


@pytest.fixture
def api(settings, client_for):
    with client_for(settings, run_scheduler=False) as client:
        yield client


def model(api, source: str | None) -> str:
    ctx = api.app.state.ctx
    job = ctx.manager.create("model", "m", {"name": "m", "network": None if source else "lenet",
                                            "network_source": source}, needs={"pool": "cpu"})
    ctx.store.update_job(job.id, status="done")
    return job.id


def image() -> dict:
    data = io.BytesIO()
    Image.new("RGB", (28, 28), (200, 30, 30)).save(data, "PNG")
    return {"images": ("red.png", data.getvalue(), "image/png")}


def test_a_custom_checkpoint_of_a_job_recorded_standard_is_a_409(api):
    job_id = model(api, None)
    folder = api.app.state.ctx.manager.folder(job_id).path
    path = JobFolder(make_checkpoint_job(folder)).checkpoints / "epoch-0001.pt"
    checkpoint = torch.load(path, weights_only=False)
    torch.save({**checkpoint, "network": None, "network_source": SOURCE}, path)
    answer = api.post(f"/api/models/{job_id}/classify", files=image())
    assert answer.status_code == 409, answer.text
    assert "holds a custom network" in answer.json()["detail"] and "\n" not in answer.json()["detail"]


@pytest.mark.slow  # the model worker starts a sandboxed Python that imports torch
def test_a_standard_claim_for_a_job_recorded_custom_is_refused_and_never_loaded_here(api):
    job_id = model(api, SOURCE)
    assert confinement_record.recorded_user_code(api.app.state.ctx, job_id)
    folder = api.app.state.ctx.manager.folder(job_id).path
    path = JobFolder(make_checkpoint_job(folder)).checkpoints / "epoch-0001.pt"  # claims lenet
    loader._cache.clear()
    answer = api.post(f"/api/models/{job_id}/classify", files=image())
    assert answer.status_code == 409, answer.text
    assert "claims the standard network lenet" in answer.json()["detail"]
    assert not any(str(path.resolve()) in key for key in loader._cache), "loaded in the server process"
