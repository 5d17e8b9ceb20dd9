"""Training a segmenter in trainyard's own loop: the recommended U-Net learns generated shapes
(mean IoU well above chance), ranks its epochs by val_miou and keeps its snapshots."""

from __future__ import annotations

import pytest

from tests.segmentation_model import EPOCHS, trained_segmenter
from trainyard.artifact.checkpoint import checkpoint_epochs

pytestmark = pytest.mark.slow


def test_the_default_network_learns_the_shapes_well_above_chance(tmp_path_factory):
    trained = trained_segmenter(tmp_path_factory)
    job = trained.ctx.store.get_job(trained.model_id)
    best = job.summary["best"]
    # chance: every pixel background gives a mean IoU of about 0.3 over the three classes
    assert best["val_miou"] > 0.6, best
    assert trained.ctx.manager.folder(trained.model_id).read_spec()["network"] == "unet_resnet18"


def test_snapshots_are_kept_as_for_the_other_tasks(tmp_path_factory):
    trained = trained_segmenter(tmp_path_factory)
    assert sorted(checkpoint_epochs(trained.job_dir)) == [3.0, float(EPOCHS)]
