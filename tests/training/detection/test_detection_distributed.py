"""A detector on 2 processes (DDP, gloo on the CPU) through the model job's real command.

The validation mAP the job reports must be over every validation image: 9 images, sharded 5 and
4 over the ranks, gathered to rank 0 for COCO's figures. So it must equal the mAP of the final
checkpoint evaluated on the whole split in one process.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from detection_helpers import detection_spec, make_detection_dataset
from model_helpers import metrics, statuses, write_job

from trainyard.core.paths import JobFolder, checkpoint_name
from trainyard.inference.detection.detector import load_detector
from trainyard.inference.detection.evaluate import evaluate_split
from trainyard.jobs.kinds.registry import get_kind


@pytest.mark.slow
def test_two_processes_train_a_detector_and_validate_on_every_image(tmp_path):
    dataset = make_detection_dataset(tmp_path / "ds", train=16, val=9, size=64)
    job = write_job(tmp_path / "job", detection_spec(dataset, epochs=1, batch_size=4, processes=2))
    command = get_kind("model").command(JobFolder(job), [])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(command, cwd=job, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert [s["status"] for s in statuses(job)] == ["running", "done"]  # rank 0 alone reports
    assert "2 processes (gloo, DDP)" in (job / "log.txt").read_text()
    (reported,) = metrics(job, "val_map50")
    assert reported[0] == 1
    loaded = load_detector(job / "checkpoints" / checkpoint_name(1))
    whole = evaluate_split(loaded, dataset, "val")
    assert whole["images"] == 9
    assert np.isclose(reported[1], whole["map50"], atol=1e-3)
