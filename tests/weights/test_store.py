"""Pulling (progress, resume, hash check) and importing weights into the store."""

from __future__ import annotations

import hashlib

import pytest
import torch

from tests.weights.file_server import Served
from tests.weights.fixtures import (
    HUB_PATH,
    TIMM_ENTRY,
    safetensors_bytes,
    state_dict_bytes,
)
from trainyard.core.errors import InvalidInput, NotFound
from trainyard.weights.download import DownloadError, HashMismatch, download
from trainyard.weights.store import WeightsStore


@pytest.fixture
def store(tmp_path):
    return WeightsStore(tmp_path / "weights")


def test_pull_shows_progress_and_stores_a_checked_file(store, file_server, hub_file):
    file_server.files[HUB_PATH] = hub_file
    seen = []
    row = store.pull(TIMM_ENTRY, lambda done, total: seen.append((done, total)))
    assert row["present"] and row["sha256"] == hub_file.etag
    assert row["origin"].startswith(file_server.url) and row["origin"].endswith("model.safetensors")
    assert seen[-1] == (len(hub_file.body), len(hub_file.body))
    assert store.list("test_resnet", present=True)[0]["name"] == TIMM_ENTRY
    assert not list(store.folder.rglob("*.part"))


def test_pull_resumes_after_a_cut_connection(store, file_server, hub_file):
    half = len(hub_file.body) // 2
    file_server.files[HUB_PATH] = Served(hub_file.body, hub_file.etag, cut_after=half)
    with pytest.raises(DownloadError, match="pull again to resume"):
        store.pull(TIMM_ENTRY)
    assert not store.resolve(TIMM_ENTRY)["present"]
    row = store.pull(TIMM_ENTRY)
    assert row["present"] and file_server.requests[-1]["range"] == f"bytes={half}-"
    assert hashlib.sha256((store.folder_of(TIMM_ENTRY) / "model.safetensors").read_bytes()).hexdigest() == hub_file.etag


def test_pull_refuses_a_tampered_file_and_leaves_nothing(store, file_server, hub_file):
    tampered = bytearray(hub_file.body)
    tampered[-5] ^= 0xFF
    file_server.files[HUB_PATH] = Served(bytes(tampered), hub_file.etag)
    with pytest.raises(HashMismatch, match="not the published"):
        store.pull(TIMM_ENTRY)
    assert not store.resolve(TIMM_ENTRY)["present"]
    assert not [p for p in store.folder.rglob("*") if p.is_file() and not p.name.endswith(".lock")]


def test_download_checks_a_torchvision_style_hash_prefix(tmp_path, file_server):
    body = b"weights" * 1000
    file_server.files["/w.pth"] = Served(body)
    prefix = hashlib.sha256(body).hexdigest()[:8]
    assert download(f"{file_server.url}/w.pth", tmp_path / "w.pth", sha256=prefix).sha256.startswith(prefix)
    with pytest.raises(HashMismatch):
        download(f"{file_server.url}/w.pth", tmp_path / "x.pth", sha256="00000000")
    assert not (tmp_path / "x.pth").exists() and not (tmp_path / "x.pth.part").exists()


def test_pull_without_a_server_says_what_to_do(store, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(DownloadError, match="import the file"):
        store.pull(TIMM_ENTRY)


def test_import_of_a_published_entry_checks_the_hash(store, tmp_path):
    fake = tmp_path / "resnet18-f37072fd.pth"
    fake.write_bytes(state_dict_bytes("resnet18", 1000, 224))
    with pytest.raises(HashMismatch):
        store.import_file("resnet18.imagenet", fake)
    assert not store.resolve("resnet18.imagenet")["present"]


def test_import_of_timm_weights_checks_the_architecture(store, tmp_path):
    good, bad = tmp_path / "good.safetensors", tmp_path / "bad.safetensors"
    good.write_bytes(safetensors_bytes("timm:test_resnet"))
    bad.write_bytes(safetensors_bytes("timm:test_vit"))
    with pytest.raises(InvalidInput, match="does not fit network timm:test_resnet"):
        store.import_file(TIMM_ENTRY, bad)
    row = store.import_file(TIMM_ENTRY, good)
    assert row["present"] and row["origin"] == "import of good.safetensors"


def test_a_checkpoint_fine_tuned_from_published_weights_keeps_their_normalisation(store, tmp_path):
    """Its preprocess entry holds the weights' mean (a constant image) and std, as training writes
    them; fine-tuning from the imported entry must normalise the same way."""
    mean = torch.empty(8, 8, 3)
    mean[:] = torch.tensor([0.485, 0.456, 0.406]) * 255
    own = tmp_path / "tuned.pt"
    torch.save({"model": _lenet_state(7), "preprocess": {"mean": mean, "mean_mode": "pixel",
                                                          "std": [0.229, 0.224, 0.225]}}, own)
    record = store.record(store.import_file("tuned-lenet", own, network="lenet")["name"])
    assert record["mean"] == pytest.approx([0.485, 0.456, 0.406]) and record["std"] == [0.229, 0.224, 0.225]


def test_import_own_weights_for_a_network(store, tmp_path):
    own = tmp_path / "mine.pt"
    torch.save({"model": _lenet_state(7)}, own)
    row = store.import_file("my-lenet", own, network="lenet")
    assert row["present"] and row["source"] == "user" and row["num_classes"] == 7
    assert row["origin"] == "import of mine.pt"  # the answer says it, as the listing does
    assert store.list(source="user")[0]["name"] == "my-lenet"
    assert store.weights_path("my-lenet")[0].suffix == ".safetensors"
    store.remove("my-lenet")
    with pytest.raises(NotFound):
        store.resolve("my-lenet")


def _lenet_state(classes: int) -> dict:
    from trainyard.networks import create_network

    return create_network("lenet", classes, 1, 28).state_dict()


@pytest.mark.parametrize("content, network, message", [
    (b"just some text", "lenet", "is not a weights file"),
    (None, "lenet", "does not fit network lenet"),
    (None, None, "--network"),
    (None, "nosuchnet", "unknown network"),
])
def test_import_refuses_what_cannot_be_used(store, tmp_path, content, network, message):
    path = tmp_path / "w.pth"
    path.write_bytes(content if content is not None else state_dict_bytes("resnet18", 10, 64))
    with pytest.raises(InvalidInput, match=message):
        store.import_file("mine", path, network=network)
    assert not store.list(source="user")


def test_missing_weights_say_how_to_get_them(store):
    with pytest.raises(NotFound, match="trainyard weights pull resnet18.imagenet1k_v1"):
        store.weights_path("resnet18.imagenet")
