"""A job the runner gave a real GPU (TRAINYARD_LEASED_GPUS set) that finds CUDA unusable fails
at once, naming the cause; it never trains on the CPU while it holds the GPU. Fake GPUs
(TRAINYARD_FAKE_GPUS) set no such variable, and their jobs still train on the CPU."""

from __future__ import annotations

import pytest
import torch
from model_helpers import make_dataset, model_spec, statuses, write_job

from trainyard.artifact import device
from trainyard.core.events import EventWriter
from trainyard.core.vocabulary import LEASED_GPUS
from trainyard.inference.tasks import job_device
from trainyard.training.build_run import pick_device, prepare
from trainyard.training.run import main
from trainyard.training.state import TrainingError


@pytest.fixture
def leased(monkeypatch):
    monkeypatch.setenv(LEASED_GPUS, "0")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-0000-not-here")


def test_a_training_job_given_a_gpu_without_cuda_fails_at_once(leased, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "init", lambda: (_ for _ in ()).throw(
        RuntimeError("Found no NVIDIA driver on your system. Please check ...")))
    dataset = make_dataset(tmp_path / "ds", train=16, val=0, size=12)
    job = write_job(tmp_path / "job", model_spec(dataset, epochs=1))
    assert main(job) != 0
    failed = statuses(job)[-1]
    assert failed["status"] == "failed"
    assert failed["error"] == ("this job was given gpu:0 but cannot use CUDA: Found no NVIDIA driver on your "
                               "system. The job stops here rather than run on the CPU while holding the GPU")
    with EventWriter(tmp_path / "direct") as events, pytest.raises(TrainingError, match="gpu:0 but cannot"):
        prepare(model_spec(dataset, epochs=1), tmp_path / "direct", events)


@pytest.mark.parametrize("cause, expected", [
    ("driver", "The NVIDIA driver on your system is too old (found version 11040)"),
    ("cpu-build", "this PyTorch (2.9.9) is built without CUDA; install a CUDA build"),
    ("count", "CUDA shows 1 device of the 2 leased (CUDA_VISIBLE_DEVICES=GPU-a,GPU-b)"),
    ("unavailable", "torch.cuda.is_available() is false"),
])
def test_the_cause_is_named(monkeypatch, cause, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b")
    monkeypatch.setattr(torch.version, "cuda", None if cause == "cpu-build" else "13.0")
    monkeypatch.setattr(torch, "__version__", "2.9.9")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cause != "unavailable")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)

    def init():
        if cause == "driver":
            raise RuntimeError("The NVIDIA driver on your system is too old (found version 11040).\nPlease update")

    monkeypatch.setattr(torch.cuda, "init", init)
    assert device.gpu_problem(2) == expected


def test_an_inference_job_given_a_gpu_without_cuda_fails(leased, monkeypatch):
    monkeypatch.setattr(device, "gpu_problem", lambda expected=1: "torch.cuda.is_available() is false")
    with pytest.raises(device.GpuUnusable, match="gpu:0 but cannot use CUDA: torch.cuda.is_available"):
        job_device()


def test_fake_gpus_and_cpu_jobs_still_run_on_the_cpu(monkeypatch):
    monkeypatch.delenv(LEASED_GPUS, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-fake-0")  # what a fake lease gets
    assert pick_device() == torch.device("cpu") and job_device() == "cpu"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert job_device() == "cpu"
