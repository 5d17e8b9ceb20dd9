"""``trainyard detect`` of many images loads its standard detector once, not once per batch: the
images are read a batch at a time (memory flat in their number), the model is not: the second
batch on finds it in load_detector's cache (keyed by the checkpoint's path, mtime and size)."""

from __future__ import annotations

import pytest
from PIL import Image

from tests.detection_data import draw_image, shapes_truth
from tests.detection_model import CLASSES, quick_detector
from trainyard.core.paths import checkpoint_name
from trainyard.inference.detection import detector as loading
from trainyard.inference.model_cache import ModelCache


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    return quick_detector(tmp_path_factory)


@pytest.mark.slow
def test_a_folder_of_several_batches_loads_the_detector_once(detector, tmp_path, monkeypatch):
    import numpy as np

    from trainyard.cli import detect as command
    from trainyard.cli import inference

    rng = np.random.default_rng(3)
    for i, shapes in enumerate(shapes_truth(7, (64, 64), tuple(CLASSES), seed=9)):
        Image.fromarray(draw_image(shapes, (64, 64), tuple(CLASSES), rng)).save(tmp_path / f"im_{i}.png")
    loads = []
    real_load = loading._load
    monkeypatch.setattr(loading, "_load", lambda *args: loads.append(args[0]) or real_load(*args))
    monkeypatch.setattr(loading, "_cache", ModelCache(loading.CACHE_SIZE))  # nothing loaded by earlier tests
    monkeypatch.setattr(inference, "BATCH", 2)  # 7 images: 4 batches
    printed = []
    monkeypatch.setattr(command, "_print", printed.extend)
    checkpoint = detector.ctx.manager.folder(detector.model_id).checkpoints / checkpoint_name(1)
    command.detect(str(checkpoint), [tmp_path], epoch=None, threshold=0.5, as_json=False)
    assert [r["image"] for r in printed] == [str(tmp_path / f"im_{i}.png") for i in range(7)]
    assert loads == [checkpoint.resolve()], f"loaded {len(loads)} times for 4 batches"
