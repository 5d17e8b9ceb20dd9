"""The one small detector trained through real jobs, shared by the detection tests of a session.

Shapes (tests/detection_data.py: squares and discs on textured backgrounds, exact boxes) as
128 KITTI-labelled 96x96 images, built by a real dataset job (``--task detection``, pad, 25 %
validation), and SSDlite trained on them for EPOCHS epochs by a real model job (a subprocess, as
the CLI runs it), with snapshots every SNAPSHOT epochs. `trained_detector(tmp_path_factory)`
builds it on first use and hands out the same one after.

`timm_detector(tmp_path_factory)` is Faster R-CNN on a timm backbone, trained 4 epochs on 16 images.

`custom_detector(tmp_path_factory)` is the editor's detection template (a user's file,
networks/custom_detection.py) trained for CUSTOM_EPOCHS on 64x64 shapes by a confined job: enough
for its inference to run, not to detect well. Its file refuses to build where it can read
``secret`` (outside every sandbox's folders), so anything that builds it unconfined fails.
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
from trainyard.networks.custom_detection import TEMPLATE
from trainyard.settings import Settings

CLASSES = ["square", "disc"]
SIZE = 96
EPOCHS = 20
SNAPSHOT = 10
NETWORK = "ssdlite320_mobilenet_v3_large"
TIMM_NETWORK = "fasterrcnn:timm:test_resnet"
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


CUSTOM_SIZE = 64
CUSTOM_EPOCHS = 2
CUSTOM_SETTINGS = {"epochs": CUSTOM_EPOCHS, "batch_size": 8, "seed": 1, "solver": "adam",
                   "lr": {"policy": "fixed", "base_lr": 0.002}}
# Prepended to the template: user code that finds the secret is not confined, and says so.
SECRET_GUARD = """import os
if os.path.exists({secret!r}):
    raise RuntimeError("user code ran unconfined: it can read {secret}")
"""

_built: dict[str, TrainedDetector] = {}


def trained_detector(tmp_path_factory) -> TrainedDetector:
    """The session's trained detector, built on first use."""
    if "detector" not in _built:
        _built["detector"] = _build(tmp_path_factory.mktemp("trained-detector"))
    return _built["detector"]


def quick_detector(tmp_path_factory) -> TrainedDetector:
    """A detector trained for one epoch on 16 images (its boxes are poor; for tests of the
    plumbing, which compare its answers through one door with another), built on first use."""
    if "quick" not in _built:
        _built["quick"] = _build(tmp_path_factory.mktemp("quick-detector"), n_images=16, size=48,
                                 settings={**SETTINGS, "epochs": 1, "snapshot_interval": 1})
    return _built["quick"]


def custom_detector(tmp_path_factory) -> TrainedDetector:
    """The session's trained custom detector, built on first use (``secret``: the guard's file)."""
    if "custom" not in _built:
        base = tmp_path_factory.mktemp("custom-detector")
        secret = base / "secret.txt"
        secret.write_text("not for user code")
        source = SECRET_GUARD.format(secret=str(secret)) + TEMPLATE
        _built["custom"] = _build(base, size=CUSTOM_SIZE, n_images=48, source=source, settings=CUSTOM_SETTINGS)
    return _built["custom"]


def timm_detector(tmp_path_factory) -> TrainedDetector:
    """Faster R-CNN on timm's smallest ResNet (``fasterrcnn:timm:test_resnet``) trained for 4 epochs of
    3 batches of 4 on 16 images (for the plumbing of a timm-backboned detector, not its boxes: 12
    steps, the few it needs before its scores clear 0.05 again), built on first use."""
    if "timm" not in _built:
        _built["timm"] = _build(tmp_path_factory.mktemp("timm-detector"), n_images=16, size=64, network=TIMM_NETWORK,
                                settings={**SETTINGS, "epochs": 4, "snapshot_interval": 4, "batch_size": 4})
    return _built["timm"]


def _build(base: Path, *, size: int = SIZE, n_images: int = 128, source: str | None = None,
           settings: dict | None = None, network: str = NETWORK) -> TrainedDetector:
    settings_ = Settings(home=base / "home", data_roots=[base / "data"], abort_grace_s=3.0)
    ctx = open_context(settings_, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    images, labels = make_shapes_dataset(base / "data" / "shapes", n_images=n_images, size=(size, size), fmt="kitti")
    spec = DatasetSpec(name="shapes", task="detection", train_folder=str(images), train_labels=str(labels),
                       width=size, height=size, resize="pad", val_percent=25)
    dataset = ctx.manager.run_foreground(create_dataset_job(ctx, spec, foreground=True).id, poll_s=0.05)
    assert dataset.status == "done", dataset.error
    request = TrainRequest(name="detector", datasets=[dataset.id], networks=[] if source else [network],
                           network_source=source, settings=dict(settings or SETTINGS))
    (model,) = create_model_jobs(ctx, request, foreground=True)
    model = ctx.manager.run_foreground(model.id, poll_s=0.05)
    assert model.status == "done", model.error
    return TrainedDetector(settings_, ctx, dataset.id, model.id, base / "data" / "shapes")
