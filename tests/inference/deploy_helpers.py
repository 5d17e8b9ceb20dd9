"""Helpers for the export, import and example-script tests.

Import as ``tests.inference.deploy_helpers`` everywhere, so there is one module and one cache:
the trained model is built once per test session, whichever test asks first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from tests.conftest import make_image_folder
from trainyard.core.paths import checkpoint_name
from trainyard.datasets.images import load_image
from trainyard.training.checkpoint import build_model_from_checkpoint, load_checkpoint, save_checkpoint
from trainyard.training.models import create_model
from trainyard.training.preprocess import preprocess_images

REPO = Path(__file__).resolve().parents[2]
PACKAGED_SCRIPTS = REPO / "src" / "trainyard" / "examples" / "classification"
REPO_SCRIPTS = REPO / "examples" / "classification"
CLASSES = {"dark": 12, "light": 12, "red": 12}
VAL_CLASSES = {"dark": 4, "light": 4, "red": 4}


@dataclass
class Trained:
    """A dataset and a lenet trained on it, in their own trainyard home."""

    settings: object
    ctx: object
    dataset_id: str
    model_id: str
    val_images: list[Path]


_trained: dict[str, Trained] = {}


def trained_model(tmp_path_factory) -> Trained:
    """Build (once per session) a 3-class half_crop dataset and train lenet on it for 3 epochs."""
    if "model" not in _trained:
        _trained["model"] = _train(tmp_path_factory.mktemp("deploy"))
    return _trained["model"]


def _train(root: Path) -> Trained:
    from trainyard.datasets.spec import DatasetSpec
    from trainyard.jobs.context import open_context
    from trainyard.jobs.dataset_jobs import create_dataset_job
    from trainyard.jobs.resources import Pools
    from trainyard.jobs.training_jobs import TrainRequest, create_model_jobs
    from trainyard.settings import Settings

    settings = Settings(home=root / "home", data_roots=[root / "data"], abort_grace_s=3.0)
    ctx = open_context(settings, pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]))
    train = make_image_folder(root / "data" / "train", CLASSES, size=(40, 30), seed=1)
    val = make_image_folder(root / "data" / "val", VAL_CLASSES, size=(33, 45), seed=2)
    spec = DatasetSpec(name="colours", train_folder=str(train), val_folder=str(val), width=28,
                       height=28, channels=3, resize="half_crop")
    dataset = create_dataset_job(ctx, spec, foreground=True)
    assert ctx.manager.run_foreground(dataset.id, poll_s=0.05).status == "done"
    request = TrainRequest(name="deploy", datasets=[dataset.id], networks=["lenet"], settings={
        "epochs": 3, "batch_size": 8, "seed": 1, "crop": 24, "lr": {"policy": "fixed", "base_lr": 0.02}})
    [job] = create_model_jobs(ctx, request, foreground=True)
    done = ctx.manager.run_foreground(job.id, poll_s=0.05)
    assert done.status == "done", done.error
    return Trained(settings, ctx, dataset.id, job.id, sorted(val.rglob("*.jpg")))


def make_checkpoint_job(job_dir: Path, *, resize: str = "squash", channels: int = 3, size=(28, 28),
                        crop: int | None = None, mean_mode: str = "image", epoch: int = 1,
                        name: str = "made", seed: int = 0) -> Path:
    """A model job folder with one checkpoint of a random (but confident) lenet: no training.

    The last layer is scaled up so probabilities are far from uniform and any preprocessing
    difference shows in them.
    """
    torch.manual_seed(seed)
    width, height = size
    image_size = crop or min(width, height)
    model = create_model("lenet", None, 4, channels, image_size)
    with torch.no_grad():
        model.classifier[-1].weight.mul_(300)
    rng = np.random.default_rng(seed)
    mean = torch.from_numpy(rng.uniform(60, 190, (height, width, channels)).astype(np.float32))
    checkpoint = {
        "model": model.state_dict(), "network": "lenet", "network_source": None,
        "classes": ["w", "x", "y z", "ünï"], "image_size": image_size,
        "preprocess": {"width": width, "height": height, "channels": channels, "resize": resize,
                       "mean_mode": mean_mode, "crop": crop, "scale": "0..1",
                       "mean": None if mean_mode == "none" else mean},
        "epoch": epoch, "metrics": {"val_accuracy": [[epoch, 50.0]]}, "best": None,
        "spec": {"id": job_dir.name, "name": name, "dataset_id": "none"},
    }
    save_checkpoint(job_dir / "checkpoints" / checkpoint_name(epoch), checkpoint)
    return job_dir


def odd_images(folder: Path) -> list[Path]:
    """Images of several aspect ratios and modes: wide, tall, exact, RGBA, palette, 16-bit."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    paths = []
    for i, (w, h) in enumerate([(61, 23), (19, 47), (28, 28), (40, 39), (100, 7)]):
        path = folder / f"photo{i}.jpg"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path, quality=92)
        paths.append(path)
    rgba = rng.integers(0, 256, (33, 50, 4), dtype=np.uint8)
    Image.fromarray(rgba, "RGBA").save(folder / "alpha.png")
    Image.fromarray(rng.integers(0, 256, (30, 31, 3), dtype=np.uint8)).convert("P").save(folder / "palette.png")
    Image.fromarray(rng.integers(0, 65535, (26, 45), dtype=np.uint16)).save(folder / "deep.png")
    return paths + [folder / "alpha.png", folder / "palette.png", folder / "deep.png"]


def server_probabilities(checkpoint_path: Path, images: list[Path]) -> np.ndarray:
    """What the server computes: the checkpoint's network on preprocess_images, softmax (N, K)."""
    checkpoint = load_checkpoint(checkpoint_path)
    model = build_model_from_checkpoint(checkpoint)
    channels = checkpoint["preprocess"]["channels"]
    batch = preprocess_images([load_image(p, channels) for p in images], checkpoint["preprocess"])
    with torch.no_grad():
        return torch.softmax(model(batch), dim=1).numpy()


def classes_of(checkpoint_path: Path) -> list[str]:
    return list(load_checkpoint(checkpoint_path)["classes"])


# -- running the example scripts where trainyard cannot be imported ---------------------------
def isolated_env() -> dict[str, str]:
    """An environment whose Python sees site-packages (numpy, Pillow, onnxruntime) but not trainyard.

    trainyard is installed editable through a .pth file; ``python -S`` skips site processing,
    so .pth files are ignored, and PYTHONPATH gives back the plain site-packages folder.
    """
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": sysconfig.get_paths()["purelib"],
            "PYTHONNOUSERSITE": "1", "HOME": os.environ.get("HOME", "/tmp"), "LC_ALL": "C.UTF-8"}


def run_isolated(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-S", *map(str, args)], cwd=cwd, env=isolated_env(),
                            capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def script_json(args: list[str], cwd: Path) -> dict[str, list]:
    """Run a script with --json; return {image argument: predictions}."""
    doc = json.loads(run_isolated([*args, "--json"], cwd).stdout)
    return {r["image"]: r["predictions"] for r in doc["results"]}


def as_matrix(predictions: dict[str, list], images: list[str], classes: list[str]) -> np.ndarray:
    """Predictions keyed by image as a (N, K) probability matrix in class order."""
    out = np.zeros((len(images), len(classes)))
    for row, image in enumerate(images):
        for label, p in predictions[image]:
            out[row, classes.index(label)] = p
    return out


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack our own archive into ``dest``; return its single top folder."""
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    [top] = list(dest.iterdir())
    return top
