"""Helpers for the export, import and example-script tests: checkpoints made without training,
odd images, the server's probabilities, and running the example scripts without trainyard.

The trained model they export is tests/trained_model.py's (the ``trained`` fixture).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from trainyard.artifact.checkpoint import (
    build_model_from_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from trainyard.artifact.network import create_model
from trainyard.artifact.normalize import preprocess_images
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.core.paths import JobFolder, checkpoint_name
from trainyard.datasets.images import load_image

REPO = Path(__file__).resolve().parents[2]
PACKAGED_SCRIPTS = REPO / "src" / "trainyard" / "examples" / "classification"
REPO_SCRIPTS = REPO / "examples" / "classification"
def make_checkpoint_job(job_dir: Path, *, resize: str = "squash", channels: int = 3, size=(28, 28),
                        crop: int | None = None, mean_mode: str = "image", epoch: int = 1,
                        name: str = "made", seed: int = 0, depth: int = 8,
                        std: tuple[float, ...] | None = None) -> Path:
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
                       "mean": None if mean_mode == "none" else mean, "std": list(std) if std else None,
                       **({"depth": depth} if depth != 8 else {})},
        "epoch": epoch, "metrics": {"val_accuracy": [[epoch, 50.0]]}, "best": None,
        "spec": {"id": job_dir.name, "name": name, "dataset_id": "none"},
    }
    save_checkpoint(JobFolder(job_dir).checkpoints / checkpoint_name(epoch), checkpoint)
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
    """The checkpoint's network in PyTorch on preprocess_images, softmax (N, K): the reference the
    server's ONNX Runtime answers and the archive's scripts are held to."""
    checkpoint = load_checkpoint(checkpoint_path)
    model = build_model_from_checkpoint(checkpoint)
    channels = checkpoint["preprocess"]["channels"]
    batch = preprocess_images([load_image(p, channels) for p in images], Preprocessing.of_checkpoint(checkpoint))
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
