"""The one small segmenter trained through real jobs, shared by the segmentation tests of a session.

Squares and discs on noise (tests/segmentation_data.py) as 48 index-PNG-masked 64x64 images,
built by a real dataset job (``task segmentation``, 25 % validation), and the recommended U-Net
(ResNet-18 encoder, from scratch) trained on them by a real model job for EPOCHS epochs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.segmentation_data import CLASSES, make_segmentation_set
from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.context import Context, open_context
from trainyard.jobs.kinds.dataset import create_dataset_job
from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
from trainyard.jobs.scheduling.resources import Pools
from trainyard.settings import Settings

SIZE = 64
EPOCHS = 6
SETTINGS = {"epochs": EPOCHS, "batch_size": 8, "seed": 1, "solver": "adam", "snapshot_interval": 3,
            "lr": {"policy": "fixed", "base_lr": 0.002}, "augment": {"flip": "lr"}}


@dataclass
class TrainedSegmenter:
    settings: Settings
    ctx: Context
    dataset_id: str
    model_id: str
    data: Path  # the source images and masks

    def env(self) -> dict[str, str]:
        """TRAINYARD_* variables pointing a CLI at this home."""
        return {"TRAINYARD_HOME": str(self.settings.home), "TRAINYARD_AUTH_TOKEN": "",
                "TRAINYARD_DATA_ROOTS": ",".join(str(r) for r in self.settings.data_roots)}

    @property
    def job_dir(self) -> Path:
        return self.ctx.manager.folder(self.model_id).path


_built: dict[str, TrainedSegmenter] = {}


def trained_segmenter(tmp_path_factory) -> TrainedSegmenter:
    """The session's trained segmenter, built on first use."""
    if "unet" not in _built:
        _built["unet"] = _build(tmp_path_factory.mktemp("trained-segmenter"))
    return _built["unet"]


def _build(base: Path, n_images: int = 48) -> TrainedSegmenter:
    settings_ = Settings(home=base / "home", data_roots=[base / "data"], abort_grace_s=3.0)
    ctx = open_context(settings_, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    images, masks = make_segmentation_set(base / "data" / "shapes", n_images, size=SIZE)
    spec = DatasetSpec(name="shapes", task="segmentation", train_folder=str(images), train_labels=str(masks),
                       classes=CLASSES, width=SIZE, height=SIZE, val_percent=25)
    dataset = ctx.manager.run_foreground(create_dataset_job(ctx, spec, foreground=True).id, poll_s=0.05)
    assert dataset.status == "done", dataset.error
    request = TrainRequest(name="segmenter", datasets=[dataset.id], networks=[], settings=dict(SETTINGS))
    (model,) = create_model_jobs(ctx, request, foreground=True)
    model = ctx.manager.run_foreground(model.id, poll_s=0.05)
    assert model.status == "done", model.error
    return TrainedSegmenter(settings_, ctx, dataset.id, model.id, base / "data" / "shapes")
