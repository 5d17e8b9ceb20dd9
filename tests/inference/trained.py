"""A small trained model shared by the inference tests of every folder (built once a session).

Three colour classes of flat colour plus noise (tests/conftest.py's generator), 28x28 RGB,
LeNet for a few epochs: the dataset build and the training run as real jobs (subprocesses),
exactly as the CLI runs them. `trained_model(tmp_path_factory)` returns a `Trained`; later calls
in the same session return the same one, whichever test module asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.context import Context, open_context
from trainyard.jobs.dataset_jobs import create_dataset_job
from trainyard.jobs.resources import Pools
from trainyard.jobs.training_jobs import TrainRequest, create_model_jobs
from trainyard.settings import Settings

# make_image_folder's palette, in its order: dark grey, light grey, red.
COLOURS = {"dark": (30, 30, 30), "light": (220, 220, 220), "red": (200, 40, 40)}
PER_CLASS = 24
EPOCHS = 3


@dataclass
class Trained:
    settings: Settings
    ctx: Context
    dataset_id: str
    model_id: str
    classes: list[str]
    images: Path  # the class folders the dataset was built from (inside the data roots)

    def env(self) -> dict[str, str]:
        """TRAINYARD_* variables pointing a CLI at this home."""
        return {"TRAINYARD_HOME": str(self.settings.home), "TRAINYARD_AUTH_TOKEN": "",
                "TRAINYARD_DATA_ROOTS": ",".join(str(r) for r in self.settings.data_roots)}


_built: dict[str, Trained] = {}


def colour_image(name: str, seed: int = 0, size=(40, 30)) -> Image.Image:
    """A fresh image of class ``name`` (not one the model trained on)."""
    rng = np.random.default_rng(1000 + seed)
    pixels = np.array(COLOURS[name], np.float32) + rng.normal(0, 12, (size[1], size[0], 3))
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8))


def trained_model(tmp_path_factory) -> Trained:
    if "model" not in _built:
        _built["model"] = _build(tmp_path_factory.mktemp("inference-home"))
    return _built["model"]


def _build(base: Path) -> Trained:
    from tests.conftest import make_image_folder  # noqa: PLC0415  (the shared generator)

    settings = Settings(home=base / "home", data_roots=[base / "data"], abort_grace_s=3.0)
    ctx = open_context(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    images = make_image_folder(base / "data" / "colours", {name: PER_CLASS for name in COLOURS})
    dataset = create_dataset_job(ctx, DatasetSpec(name="colours", train_folder=str(images), width=28,
                                                  height=28, channels=3, val_percent=25), foreground=True)
    dataset = ctx.manager.run_foreground(dataset.id, poll_s=0.1)
    assert dataset.status == "done", dataset.error
    request = TrainRequest(name="lenet", datasets=[dataset.id], networks=["lenet"],
                           settings={"epochs": EPOCHS, "batch_size": 12, "seed": 1,
                                     "lr": {"policy": "fixed", "base_lr": 0.02}})
    (model,) = create_model_jobs(ctx, request, foreground=True)
    model = ctx.manager.run_foreground(model.id, poll_s=0.1)
    assert model.status == "done", model.error
    return Trained(settings, ctx, dataset.id, model.id, sorted(COLOURS), images)
