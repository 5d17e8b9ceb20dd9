"""The interface issue 45's checks use, end to end on the CPU: ``dataset create --task multilabel``
from a CSV, ``train`` with a standard classifier, ``classify --json`` answering several labels
for an image that has them, ``evaluate --json`` answering micro F1 above a trivial predictor's."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from tests.multilabel_data import LABELS, draw, make_multilabel_set
from trainyard.artifact.checkpoint import checkpoint_name, load_checkpoint
from trainyard.cli.main import app
from trainyard.core.paths import JobFolder

pytestmark = pytest.mark.slow  # a dataset, 8 epochs and two inference jobs: about 25 s on one core


def run(home, *args: str):
    result = CliRunner().invoke(app, list(args), env=home.env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> SimpleNamespace:
    tmp = tmp_path_factory.mktemp("multilabel")
    data = tmp / "data"
    train, _ = make_multilabel_set(data, n=160, seed=0)
    val, truth = make_multilabel_set(data, n=60, seed=1, name="val.csv")
    env = {"TRAINYARD_HOME": str(tmp / "home"), "TRAINYARD_DATA_ROOTS": str(data), "TRAINYARD_AUTH_TOKEN": ""}
    return SimpleNamespace(tmp=tmp, data=data, train=train, val=val, val_truth=truth, env=env)


@pytest.fixture(scope="module")
def model(home) -> SimpleNamespace:
    dataset = run(home, "dataset", "create", "--name", "shapes", "--task", "multilabel", "--train-list",
                  str(home.train), "--val-list", str(home.val), "--image-root", str(home.data),
                  "--size", "32x32", "--json")
    torch.manual_seed(0)
    trained = run(home, "train", "--dataset", dataset["id"], "--network", "lenet", "--epochs", "8",
                  "--batch-size", "16", "--lr", "0.01", "--solver", "adam", "--seed", "1", "--json")
    (job,) = trained["jobs"]
    assert job["status"] == "done", job["error"]
    return SimpleNamespace(dataset=dataset, id=job["id"], job=job)


def test_the_dataset_reports_labels_and_per_label_counts(home, model):
    assert model.dataset["status"] == "done" and model.dataset["summary"]["classes"] == list(LABELS)
    val_counts = model.dataset["summary"]["counts"]["val"]
    assert val_counts == {name: sum(name in t for t in home.val_truth) for name in LABELS}


def test_evaluate_answers_micro_f1_well_above_a_trivial_predictor(home, model):
    doc = run(home, "evaluate", model.id, "--json")
    positives = sum(len(t) for t in home.val_truth) / (len(home.val_truth) * len(LABELS))
    every_label = 2 * positives / (1 + positives)  # micro F1 of answering every label for every image
    assert doc["task"] == "multilabel" and doc["images"] == 60
    assert doc["micro_f1"] >= max(0.85, every_label + 0.2), doc
    assert {"macro_f1", "map", "per_label"} <= set(doc) and doc["map"] > 0.85
    assert [row["label"] for row in doc["per_label"]] == list(LABELS)
    # The thresholds tuned in training and saved with the snapshot, not a default
    folder = JobFolder(home.tmp / "home" / "jobs" / model.id).checkpoints
    saved = load_checkpoint(folder / checkpoint_name(doc["epoch"]))["thresholds"]
    assert [row["threshold"] for row in doc["per_label"]] == pytest.approx(saved, abs=1e-6)


def test_classify_answers_every_label_over_its_threshold(home, model):
    rng = np.random.default_rng(7)
    images = {"all": set(LABELS), "two": {"red_square", "green_bar"}, "none": set()}
    for name, labels in images.items():
        draw(labels, rng).save(home.tmp / f"{name}.png")
    doc = run(home, "classify", model.id, *(str(home.tmp / f"{name}.png") for name in images), "--json")
    found = {r["image"].rsplit("/", 1)[-1][:-4]: r["labels"] for r in doc["results"]}
    assert {x["label"] for x in found["all"]} == set(LABELS)
    assert {x["label"] for x in found["two"]} == images["two"]
    assert found["none"] == []
    scores = [x["score"] for x in found["all"]]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)


def test_the_archive_answers_the_labels_as_the_server_and_imports_as_multilabel(home, model):
    import subprocess
    import sys
    import tarfile

    archive = home.tmp / "shapes.tar.gz"
    CliRunner().invoke(app, ["export", model.id, "-o", str(archive)], env=home.env)
    image = str(home.tmp / "probe.png")
    draw({"blue_circle", "green_bar"}, np.random.default_rng(3)).save(image)
    with tarfile.open(archive) as tar:
        script = next(m for m in tar.getnames() if m.endswith("use_archive.py"))
        (home.tmp / "use_archive.py").write_bytes(tar.extractfile(script).read())
    printed = subprocess.run([sys.executable, str(home.tmp / "use_archive.py"), str(archive), image, "--json"],
                             capture_output=True, text=True, check=True)
    from_archive = json.loads(printed.stdout)["results"][0]["labels"]
    served = run(home, "classify", model.id, image, "--json")["results"][0]["labels"]
    assert [x["label"] for x in from_archive] == [x["label"] for x in served] and served
    assert all(abs(a["score"] - b["score"]) < 1e-4 for a, b in zip(from_archive, served))
    imported = run(home, "import", str(archive), "--json")
    assert imported["task"] == "multilabel"
    again = run(home, "classify", imported["id"], image, "--json")["results"][0]["labels"]
    assert [x["label"] for x in again] == [x["label"] for x in served]


def hand_written_micro_f1(dataset_dir, epochs: int = 8, batch: int = 16, seed: int = 1) -> float:
    """Micro F1 on val at 0.5 of a plain loop: the same stored images (0..1 less the mean image),
    LeNet, Adam at 0.01, BCE with logits, the same epochs and batch."""
    from trainyard.datasets.storage import open_split
    from trainyard.networks import create_network

    torch.manual_seed(seed)
    mean = torch.from_numpy(np.load(dataset_dir / "mean.npy")).permute(2, 0, 1)[None] / 255

    def tensors(split: str):
        reader = open_split(dataset_dir, split)
        pixels = torch.from_numpy(reader.read_batch(np.arange(len(reader)))).permute(0, 3, 1, 2).float() / 255
        return pixels - mean, torch.from_numpy(np.asarray(reader.labels)).float()

    (x, y), (vx, vy) = tensors("train"), tensors("val")
    net = create_network("lenet", y.shape[1], 3, 32)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(epochs):
        for idx in torch.randperm(len(x)).split(batch):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    net.eval()
    with torch.no_grad():
        predicted = torch.sigmoid(net(vx)) >= 0.5
    tp = (predicted & vy.bool()).sum().item()
    return 2 * tp / (predicted.sum().item() + vy.sum().item())


def test_training_reaches_the_micro_f1_of_a_hand_written_bce_loop(home, model):
    from trainyard.core.paths import JobFolder

    dataset_dir = JobFolder(home.tmp / "home" / "jobs" / model.dataset["id"]).dataset
    ours = run(home, "evaluate", model.id, "--json")["micro_f1"]
    theirs = hand_written_micro_f1(dataset_dir)
    assert ours >= theirs - 0.02, (ours, theirs)


def test_the_server_answers_the_labels_and_lists_a_labels_images(home, model):
    from tests.conftest import open_client
    from trainyard.settings import Settings

    image = home.tmp / "api.png"
    draw({"red_square", "blue_circle"}, np.random.default_rng(11)).save(image)
    settings = Settings(home=home.tmp / "home", data_roots=[home.data])
    with open_client(settings, run_scheduler=False) as client, open(image, "rb") as f:
        answer = client.post(f"/api/models/{model.id}/classify", files={"images": ("api.png", f, "image/png")})
        page = client.get(f"/api/datasets/{model.dataset['id']}/images?split=val&label=2&limit=100")
        shown = client.get(f"/datasets/{model.dataset['id']}").text
    assert "Labels together" in shown and "train (160 images)" in shown  # the page counts images, not labels
    assert answer.status_code == 200, answer.text
    local = run(home, "classify", model.id, str(image), "--json")["results"][0]["labels"]
    assert answer.json()["results"][0]["labels"] == local and local
    # the dataset's images of label 2 (red_square), each with its labels
    with_red = [i for i, t in enumerate(home.val_truth) if "red_square" in t]
    assert [x["index"] for x in page.json()["images"]] == with_red
    assert all(2 in x["labels"] and x["label"] == len(x["labels"]) for x in page.json()["images"])
