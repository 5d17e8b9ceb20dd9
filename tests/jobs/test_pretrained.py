"""``--pretrained`` resolved once: imagenet, a store entry, a model job (JOB[:EPOCH]) or a file."""

from __future__ import annotations

import pytest

from trainyard.core.errors import NotFound
from trainyard.core.paths import PathNotAllowed, checkpoint_name
from trainyard.jobs.kinds.pretrained import Pretrained, resolve_pretrained
from trainyard.jobs.runs.manager import JobError
from trainyard.weights.store import WeightsStore

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # no store-specific part


def model_job(ctx, epochs=(1, 2), spec=None):
    """A queued model job with checkpoint files for ``epochs`` (resolving reads only their names)."""
    job = ctx.manager.create("model", "m", spec or {"network": "lenet", "network_source": None},
                             needs={"pool": "cpu"})
    folder = ctx.manager.folder(job.id)
    folder.checkpoints.mkdir(parents=True, exist_ok=True)
    for epoch in epochs:
        (folder.checkpoints / checkpoint_name(epoch)).write_bytes(b"not read here")
    return job, folder


def test_nothing_is_none(ctx):
    assert resolve_pretrained(ctx, None) is None and resolve_pretrained(ctx, "") is None


def test_a_job_means_its_latest_checkpoint_or_the_epoch_named(ctx):
    job, folder = model_job(ctx)
    latest = resolve_pretrained(ctx, job.id)
    assert latest == Pretrained(job.id, "job", str(folder.checkpoints / checkpoint_name(2)), "lenet", None)
    assert latest.brings_network and latest.spec_fields("lenet") == {"pretrained": latest.path}
    first = resolve_pretrained(ctx, f"{job.id}:1")
    assert first is not None and first.path == str(folder.checkpoints / checkpoint_name(1))


def test_a_custom_networks_job_brings_its_source(ctx):
    job, _ = model_job(ctx, spec={"network": None, "network_source": "def build(): ..."})
    ref = resolve_pretrained(ctx, job.id)
    assert ref is not None and (ref.network, ref.network_source) == (None, "def build(): ...")


def test_a_job_that_cannot_give_weights_is_refused_with_what_to_change(ctx):
    job, _ = model_job(ctx)
    with pytest.raises(JobError, match=rf"model {job.id}: no checkpoint for epoch 7 \(epochs with one: 1, 2\)"):
        resolve_pretrained(ctx, f"{job.id}:7")
    with pytest.raises(JobError, match=f"model {job.id}: could not convert"):
        resolve_pretrained(ctx, f"{job.id}:last")
    dataset = ctx.manager.create("dataset", "d", {}, needs={"pool": "cpu"})
    with pytest.raises(JobError, match=f"{dataset.id} is a dataset job; pretrained weights come from a model job"):
        resolve_pretrained(ctx, dataset.id)


def test_imagenet_and_store_entries_are_store_weights(ctx, settings, tmp_path):
    imagenet = resolve_pretrained(ctx, "imagenet")
    assert imagenet is not None and imagenet.source == "store" and not imagenet.brings_network
    published = resolve_pretrained(ctx, "resnet18.imagenet")
    assert published is not None and (published.source, published.network) == ("store", "resnet18")
    assert published.brings_network and published.path is None  # its file is found per network
    with pytest.raises(NotFound, match="trainyard weights pull resnet18.imagenet1k_v1"):
        published.spec_fields("resnet18")  # not pulled: refused before a job is queued
    with pytest.raises(Exception, match="are for network resnet18, not lenet"):
        published.spec_fields("lenet")


def test_anything_else_is_a_file_inside_the_data_roots(ctx, settings, tmp_path):
    weights = settings.data_roots[0] / "w.pt"
    weights.parent.mkdir(parents=True, exist_ok=True)
    weights.write_bytes(b"weights")
    ref = resolve_pretrained(ctx, str(weights))
    assert ref == Pretrained(str(weights), "file", str(weights.resolve()))
    assert not ref.brings_network and ref.spec_fields(None) == {"pretrained": str(weights.resolve())}
    with pytest.raises(JobError, match=f"pretrained weights {settings.data_roots[0]} is not a file"):
        resolve_pretrained(ctx, str(settings.data_roots[0]))
    outside = tmp_path / "elsewhere.pt"
    outside.write_bytes(b"x")
    with pytest.raises(PathNotAllowed):
        resolve_pretrained(ctx, str(outside))


def test_a_users_own_store_entry_brings_its_network(ctx, settings, tmp_path):
    import torch

    from trainyard.networks import create_network

    own = tmp_path / "own.pt"
    torch.save({"model": create_network("lenet", 7, 1, 28).state_dict()}, own)
    WeightsStore.from_settings(settings).import_file("my-lenet", own, network="lenet", mean="0.5", std="0.25")
    ref = resolve_pretrained(ctx, "my-lenet")
    assert ref is not None and (ref.source, ref.network, ref.brings_network) == ("store", "lenet", True)
    fields = ref.spec_fields("lenet")
    assert fields["pretrained_entry"] == "my-lenet" and fields["input_norm"] == {"mean": [0.5], "std": [0.25]}
    assert fields["pretrained"].endswith(".pt") or fields["pretrained"].endswith(".safetensors")
