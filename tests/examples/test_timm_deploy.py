"""A timm network fine-tuned from store weights trains, classifies and exports, and the archive's
scripts reproduce the server's answers, normalisation (the weights' mean and std) included."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import make_image_folder
from tests.inference.deploy_helpers import as_matrix, classes_of, odd_images, script_json, server_probabilities, unpack
from tests.weights.fixtures import TIMM_ENTRY, safetensors_bytes
from trainyard.artifact.checkpoint import checkpoint_for_epoch, load_checkpoint
from trainyard.datasets.spec import DatasetSpec
from trainyard.inference import classify
from trainyard.inference.export import export_model
from trainyard.inference.loader import load_model
from trainyard.jobs.kinds.dataset import create_dataset_job
from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
from trainyard.weights.store import WeightsStore


def test_timm_network_from_store_weights_end_to_end(ctx, settings, tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(safetensors_bytes("timm:test_resnet"))
    WeightsStore.from_settings(settings).import_file(TIMM_ENTRY, weights)
    images = make_image_folder(settings.data_roots[0] / "colours", {"dark": 8, "light": 8, "red": 8}, size=(36, 36))
    dataset = create_dataset_job(ctx, DatasetSpec(name="c", train_folder=str(images), width=36, height=36,
                                                  channels=3, val_percent=25), foreground=True)
    assert ctx.manager.run_foreground(dataset.id, poll_s=0.05).status == "done"
    request = TrainRequest(name="timm", datasets=[dataset.id], networks=["timm:test_resnet"], pretrained="imagenet",
                           settings={"epochs": 2, "batch_size": 6, "crop": 32, "seed": 0})
    [job] = create_model_jobs(ctx, request, foreground=True)
    job = ctx.manager.run_foreground(job.id, poll_s=0.05)
    assert job.status == "done", job.error

    path = checkpoint_for_epoch(ctx.manager.folder(job.id).path)
    checkpoint = load_checkpoint(path)
    assert checkpoint["network"] == "timm:test_resnet" and checkpoint["preprocess"]["std"] == [0.5, 0.5, 0.5]
    assert checkpoint["preprocess"]["mean_mode"] == "pixel"
    np.testing.assert_allclose(checkpoint["preprocess"]["mean"].numpy(), 127.5)

    archive = export_model(ctx.manager.folder(job.id).path, None, tmp_path / "model.tar.gz").path
    top = unpack(archive, tmp_path / "unpacked")
    assert json.loads((top / "preprocess.json").read_text())["std"] == [0.5, 0.5, 0.5]
    pictures = odd_images(tmp_path / "images")
    names = [str(p) for p in pictures]
    server = server_probabilities(path, pictures)
    classes = classes_of(path)
    loaded = load_model(path)  # what POST /api/models/{id}/classify runs
    answers = classify.classify(loaded, [classify.decode(p.read_bytes(), loaded) for p in pictures], top=3)
    for row, ranked in zip(server, answers):
        assert ranked[0][0] == classes[row.argmax()] and abs(ranked[0][1] - row.max()) <= 1e-4
    for args in (["example.py", "model.onnx", *names, "-l", "labels.txt", "-m", "mean.npy", "-p", "preprocess.json"],
                 ["use_archive.py", archive, *names]):
        np.testing.assert_allclose(as_matrix(script_json(args, top), names, classes), server, atol=1e-4, rtol=0)
