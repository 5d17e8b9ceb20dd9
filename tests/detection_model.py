"""The one small detector trained through real jobs, shared by the detection tests of a session.

Shapes (tests/detection_data.py: squares and discs on textured backgrounds, exact boxes) as
128 KITTI-labelled 96x96 images, built by a real dataset job (``--task detection``, pad, 25 %
validation), and SSDlite trained on them for EPOCHS epochs by a real model job (a subprocess, as
the CLI runs it), with snapshots every SNAPSHOT epochs. `trained_detector(tmp_path_factory)`
builds it on first use and hands out the same one after.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.detection_data import make_shapes_dataset
from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.context import Context, open_context
from trainyard.jobs.kinds.dataset import create_dataset_job
from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
from trainyard.jobs.scheduling.resources import Pools
from trainyard.settings import Settings

CLASSES = ["square", "disc"]
SIZE = 96
EPOCHS = 20
SNAPSHOT = 10
NETWORK = "ssdlite320_mobilenet_v3_large"
SETTINGS = {"epochs": EPOCHS, "batch_size": 8, "seed": 1, "solver": "adam", "snapshot_interval": SNAPSHOT,
            "lr": {"policy": "fixed", "base_lr": 0.002}, "augment": {"flip": "lr"}}


@dataclass
class TrainedDetector:
    settings: Settings
    ctx: Context
    dataset_id: str
    model_id: str
    data: Path  # inside the data roots: the dataset's source images and labels

    def env(self) -> dict[str, str]:
        """TRAINYARD_* variables pointing a CLI at this home."""
        return {"TRAINYARD_HOME": str(self.settings.home), "TRAINYARD_AUTH_TOKEN": "",
                "TRAINYARD_DATA_ROOTS": ",".join(str(r) for r in self.settings.data_roots)}

    @property
    def job_dir(self) -> Path:
        return self.ctx.manager.folder(self.model_id).path

    @property
    def dataset_dir(self) -> Path:
        return self.ctx.manager.folder(self.dataset_id).dataset


_built: dict[str, TrainedDetector] = {}


def trained_detector(tmp_path_factory) -> TrainedDetector:
    """The session's trained detector, built on first use."""
    if "detector" not in _built:
        _built["detector"] = _build(tmp_path_factory.mktemp("trained-detector"))
    return _built["detector"]


def _build(base: Path) -> TrainedDetector:
    settings = Settings(home=base / "home", data_roots=[base / "data"], abort_grace_s=3.0)
    ctx = open_context(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    images, labels = make_shapes_dataset(base / "data" / "shapes", n_images=128, size=(SIZE, SIZE), fmt="kitti")
    spec = DatasetSpec(name="shapes", task="detection", train_folder=str(images), train_labels=str(labels),
                       width=SIZE, height=SIZE, resize="pad", val_percent=25)
    dataset = ctx.manager.run_foreground(create_dataset_job(ctx, spec, foreground=True).id, poll_s=0.05)
    assert dataset.status == "done", dataset.error
    request = TrainRequest(name="detector", datasets=[dataset.id], networks=[NETWORK], settings=dict(SETTINGS))
    (model,) = create_model_jobs(ctx, request, foreground=True)
    model = ctx.manager.run_foreground(model.id, poll_s=0.05)
    assert model.status == "done", model.error
    return TrainedDetector(settings, ctx, dataset.id, model.id, base / "data" / "shapes")
