"""The one small model trained through real jobs, shared by every test that needs a trained one.

Three colour classes of flat colour plus noise (tests/conftest.py's generator): a train folder
of 40x30 images and a validation folder of 33x45 ones, built as a 28x28 RGB ``half_crop``
dataset "colours"; LeNet trained on it for 3 epochs with a 24-pixel crop as job "deploy". The
dataset build and the training run as real jobs (subprocesses), exactly as the CLI runs them.
tests/conftest.py's session fixture ``trained`` returns it; `trained_model(tmp_path_factory)`
is the same one for module fixtures that need it before a test runs (it is built once a session).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.context import Context, open_context
from trainyard.jobs.kinds.dataset import create_dataset_job
from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
from trainyard.jobs.scheduling.resources import Pools
from trainyard.settings import Settings

# make_image_folder's palette, in its order: dark grey, light grey, red.
COLOURS = {"dark": (30, 30, 30), "light": (220, 220, 220), "red": (200, 40, 40)}
TRAIN_PER_CLASS = 18
VAL_PER_CLASS = 6
EPOCHS = 3
CROP = 24  # the network sees the central 24x24 of the 28x28 stored images


@dataclass
class Trained:
    settings: Settings
    ctx: Context
    dataset_id: str
    model_id: str
    classes: list[str]
    images: Path  # the class folders of the training images (inside the data roots)
    val_images: list[Path]  # the validation images, sorted

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
    """The session's trained model, built on first use."""
    if "model" not in _built:
        _built["model"] = _build(tmp_path_factory.mktemp("trained-model"))
    return _built["model"]


def _build(base: Path) -> Trained:
    from tests.conftest import make_image_folder  # noqa: PLC0415  (the shared generator)

    settings = Settings(home=base / "home", data_roots=[base / "data"], abort_grace_s=3.0)
    ctx = open_context(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    train = make_image_folder(base / "data" / "colours", dict.fromkeys(COLOURS, TRAIN_PER_CLASS), seed=1)
    val = make_image_folder(base / "data" / "val", dict.fromkeys(COLOURS, VAL_PER_CLASS), size=(33, 45), seed=2)
    spec = DatasetSpec(name="colours", train_folder=str(train), val_folder=str(val), width=28, height=28,
                       channels=3, resize="half_crop")
    dataset = ctx.manager.run_foreground(create_dataset_job(ctx, spec, foreground=True).id, poll_s=0.05)
    assert dataset.status == "done", dataset.error
    request = TrainRequest(name="deploy", datasets=[dataset.id], networks=["lenet"], settings={
        "epochs": EPOCHS, "batch_size": 8, "seed": 1, "crop": CROP, "lr": {"policy": "fixed", "base_lr": 0.02}})
    (model,) = create_model_jobs(ctx, request, foreground=True)
    model = ctx.manager.run_foreground(model.id, poll_s=0.05)
    assert model.status == "done", model.error
    return Trained(settings, ctx, dataset.id, model.id, sorted(COLOURS), train, sorted(val.rglob("*.jpg")))
