"""The export-time check of a format's copy against PyTorch, and the data it runs on.

A classifier's copy runs the validation split (the model's own preprocessing, as training's
validation) beside PyTorch: ``top1_agreement`` (0..1), ``max_logit_diff``, the accuracy of both
(percent) and the drop; where the dataset is gone, fixed noise stands in and accuracy is None.
Latency is the median per image at batch 1 on one thread, beside the fp32 ONNX graph's.
An int8 copy is refused beyond ``MAX_INT8_DROP`` points or below ``MIN_INT8_AGREEMENT``
unless forced: int8 logits differ by design, so its answers are judged, never a logit bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from trainyard.artifact.checkpoint import JobOrigin
from trainyard.artifact.inputs import prepare_pixels
from trainyard.artifact.normalize import input_arrays
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.datasets.storage import open_split
from trainyard.inference.exporters.base import FormatRefused, Runner
from trainyard.inference.onnx_export import sample_inputs
from trainyard.networks import main_output

MAX_CHECK_IMAGES = 512  # the validation images compared (the first ones)
NOISE_IMAGES = 32
LATENCY_IMAGES = 20
MAX_INT8_DROP = 2.0  # accuracy points
MIN_INT8_AGREEMENT = 0.95
BATCH = 32


def split_inputs(checkpoint: dict, split: str, count: int, *, shuffle: bool = False
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """(prepared inputs, labels) of up to ``count`` images of the training dataset's ``split``,
    or None where the dataset or split is gone (or was stored at another size)."""
    prep = Preprocessing.of_checkpoint(checkpoint)
    dataset = JobOrigin.of_checkpoint(checkpoint).dataset_dir
    try:
        reader = open_split(Path(dataset), split) if dataset else None
    except (FileNotFoundError, OSError, ValueError):
        return None
    if reader is None or not len(reader):
        return None
    order = np.random.default_rng(0).permutation(len(reader)) if shuffle else np.arange(len(reader))
    chosen = np.sort(order[:count])
    pixels = reader.read_batch(chosen)
    if pixels.shape[1:] != tuple(prep.stored_shape):
        return None
    mean, std = input_arrays(prep)
    return prepare_pixels(pixels, prep.crop, mean, std).inputs, np.asarray(reader.labels)[chosen]


def check_inputs(checkpoint: dict) -> tuple[np.ndarray, np.ndarray | None, str]:
    """(inputs, labels or None, what they are) for the check: the validation split, else noise."""
    found = split_inputs(checkpoint, "val", MAX_CHECK_IMAGES)
    if found is not None:
        return found[0], found[1], "val"
    shape = Preprocessing.of_checkpoint(checkpoint).input_shape
    return sample_inputs(shape, NOISE_IMAGES, seed=0).numpy(), None, "noise"


def calibration_source(checkpoint: dict) -> Callable[[int], np.ndarray]:
    """N -> N training images (a fixed random choice), prepared as the model was trained."""
    def images(count: int) -> np.ndarray:
        found = split_inputs(checkpoint, "train", count, shuffle=True)
        if found is None:
            raise FormatRefused("an int8 export calibrates on the model's training images, and its dataset's "
                                "train split is gone")
        return found[0]
    return images


def torch_runner(model: torch.nn.Module) -> Runner:
    def run(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return main_output(model(torch.from_numpy(x))).float().numpy()
    return run


def logits(run: Runner, x: np.ndarray) -> np.ndarray:
    return np.concatenate([run(x[i:i + BATCH]) for i in range(0, len(x), BATCH)])


def latency_ms(run: Runner, x: np.ndarray) -> float:
    """Median milliseconds per image, batch 1, after one warm-up run (the runner's own threads)."""
    images = x[:LATENCY_IMAGES]
    run(images[:1])
    times = []
    for i in range(len(images)):
        start = time.perf_counter()
        run(images[i:i + 1])
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000)


def compare(expected: np.ndarray, got: np.ndarray, labels: np.ndarray | None) -> dict:
    """The classification figures of ``got`` (a copy's logits) against ``expected`` (PyTorch's)."""
    agreement = float(np.mean(expected.argmax(1) == got.argmax(1)))
    doc: dict = {"images": int(len(expected)), "top1_agreement": agreement,
                 "max_logit_diff": float(np.abs(got.astype(np.float64) - expected).max()),
                 "accuracy_reference": None, "accuracy": None, "accuracy_drop": None}
    if labels is not None:
        reference, ours = (100 * float(np.mean(a.argmax(1) == labels)) for a in (expected, got))
        doc.update(accuracy_reference=reference, accuracy=ours, accuracy_drop=reference - ours)
    return doc


def judge_int8(figures: dict, force: bool) -> None:
    """FormatRefused when an int8 copy is too far from PyTorch, unless ``force``."""
    drop, agreement = figures.get("accuracy_drop"), figures["top1_agreement"]
    too_far = (drop is not None and drop > MAX_INT8_DROP) or agreement < MIN_INT8_AGREEMENT
    if too_far and not force:
        dropped = f"accuracy drops {drop:.2f} points (at most {MAX_INT8_DROP:g}), " if drop is not None else ""
        raise FormatRefused(f"the int8 copy is too far from PyTorch: {dropped}top-1 agreement {agreement:.3f} "
                            f"(at least {MIN_INT8_AGREEMENT:g}) on {figures['images']} {figures['check_data']} "
                            "images; nothing was written (--force ships it anyway, these figures in its manifest)")
    figures["forced"] = bool(too_far)
