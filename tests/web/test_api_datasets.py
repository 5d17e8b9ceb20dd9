"""The datasets API end to end: the scheduler really builds each dataset in a subprocess."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from trainyard.core.paths import JobFolder
from trainyard.settings import Settings

GOOD_IMAGES = 20  # the image_folder fixture: 10 cats, 10 dogs, plus two bad files
SIZE = {"width": 32, "height": 24}  # not square, so a swapped width and height shows


def create(client, **fields) -> dict:
    response = client.post("/api/datasets", json={"name": "pets", **SIZE, **fields})
    assert response.status_code == 201, response.text
    return response.json()


def build(client, wait_job, **fields) -> dict:
    job = wait_job(client, create(client, **fields)["id"])
    assert job["status"] == "done", job["error"]
    return client.get(f"/api/datasets/{job['id']}").json()


def total(counts: dict) -> int:
    return sum(sum(per_class.values()) for per_class in counts.values())


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return Image.open(io.BytesIO(data)).size


def file_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def shared(tmp_path_factory, client_for, make_images_with_bad_files, wait_job):
    """One server and one dataset built from a folder with bad files, for the tests that only read
    it (building takes seconds). Tests here may add jobs, never change or delete this one."""
    tmp = tmp_path_factory.mktemp("shared")
    settings = Settings(home=tmp / "home", data_roots=[tmp / "data"])
    folder = make_images_with_bad_files(settings.data_roots[0] / "images")
    with client_for(settings) as client:
        dataset = build(client, wait_job, train_folder=str(folder))
        yield SimpleNamespace(client=client, settings=settings, dataset=dataset, folder=folder)


# -- creating from a folder ---------------------------------------------------------------------

def test_folder_with_bad_files_builds_and_lists_what_it_skipped(shared):
    client, built = shared.client, shared.dataset
    assert built["classes"] == ["cat", "dog"]
    assert set(built["counts"]) == {"train", "val"}
    assert total(built["counts"]) == GOOD_IMAGES
    assert sum(built["counts"]["val"].values()) == 4  # 25 % of each class
    assert built["image_size"] == [32, 24]
    skipped = {Path(s["path"]).name: s["reason"] for s in built["skipped"]}
    assert set(skipped) == {"broken.jpg", "notes.png"}
    assert all(reason for reason in skipped.values())

    jobs = {j["id"]: j for j in client.get("/api/jobs").json()["jobs"]}
    assert jobs[built["id"]]["kind"] == "dataset"
    assert jobs[built["id"]]["status"] == "done"
    listed = client.get("/api/datasets").json()["datasets"]
    assert built["id"] in [d["id"] for d in listed]


def test_path_outside_the_data_roots_is_refused(client, tmp_path, make_images):
    outside = make_images(tmp_path / "elsewhere")
    response = client.post("/api/datasets", json={"name": "x", "train_folder": str(outside)})
    assert response.status_code == 403
    assert "TRAINYARD_DATA_ROOTS" in response.json()["detail"]
    assert client.get("/api/jobs").json()["jobs"] == []


def test_dotdot_cannot_climb_out_of_the_data_roots(client, settings, tmp_path, make_images):
    make_images(tmp_path / "elsewhere")
    sneaky = settings.data_roots[0] / ".." / "elsewhere"
    response = client.post("/api/datasets", json={"name": "x", "train_folder": str(sneaky)})
    assert response.status_code == 403
    assert "TRAINYARD_DATA_ROOTS" in response.json()["detail"]


def test_missing_path_is_refused(client, settings):
    missing = settings.data_roots[0] / "no-such-folder"
    response = client.post("/api/datasets", json={"name": "x", "train_folder": str(missing)})
    assert response.status_code == 404
    assert "does not exist" in response.json()["detail"]
    assert client.get("/api/jobs").json()["jobs"] == []


@pytest.mark.parametrize("fields, words", [
    ({"val_percent": 120}, ["val_percent", "100"]),
    ({"resize": "stretch"}, ["stretch", "squash"]),
    ({"width": 0}, ["width"]),
    ({"colour": "blue"}, ["colour"]),
])
def test_invalid_spec_is_422_with_a_clear_message(client, image_folder, fields, words):
    response = client.post("/api/datasets", json={"name": "x", "train_folder": str(image_folder), **fields})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, str)
    for word in words:
        assert word in detail
    assert client.get("/api/jobs").json()["jobs"] == []


def test_parent_dir_cannot_be_set_by_hand(shared):
    """Only append points a build at a parent; a user-given parent_dir would read any folder."""
    parent = JobFolder(shared.settings.jobs_dir / shared.dataset["id"]).dataset
    response = shared.client.post("/api/datasets", json={"name": "x", "train_folder": str(shared.folder),
                                                         "parent_dir": str(parent)})
    assert response.status_code == 400
    assert "append" in response.json()["detail"]


def test_one_class_fails_with_a_clear_error_and_leaves_no_dataset(client, settings, wait_job, make_images):
    folder = make_images(settings.data_roots[0] / "lonely", {"cat": 6})
    job = wait_job(client, create(client, train_folder=str(folder))["id"])
    assert job["status"] == "failed"
    assert "two classes" in job["error"]
    job_dir = settings.jobs_dir / job["id"]
    assert not (JobFolder(job_dir).dataset).exists()
    assert not (JobFolder(job_dir).work / "dataset.tmp").exists()
    assert client.get(f"/api/datasets/{job['id']}/images").status_code == 409


# -- archives -----------------------------------------------------------------------------------

def test_append_makes_a_new_version_and_leaves_the_old_one_alone(shared, wait_job, make_images):
    client, settings, built = shared.client, shared.settings, shared.dataset
    old_dir = JobFolder(settings.jobs_dir / built["id"]).dataset
    before = file_digest(old_dir)
    more = make_images(settings.data_roots[0] / "more", {"cat": 4, "dog": 4, "eel": 4}, seed=1)

    response = client.post(f"/api/datasets/{built['id']}/append", json={"train_folder": str(more)})
    assert response.status_code == 201, response.text
    job = wait_job(client, response.json()["id"])
    assert job["status"] == "done", job["error"]
    assert job["parent"] == built["id"]
    assert job["id"] != built["id"]

    new = client.get(f"/api/datasets/{job['id']}").json()
    assert new["classes"] == ["cat", "dog", "eel"]  # the parent's classes keep their labels
    assert total(new["counts"]) == GOOD_IMAGES + 12
    assert new["image_size"] == built["image_size"]
    assert new["name"] == "pets v2"
    # Its own next version counts on (issue 31.9: was "pets v2 v2"), and its page names its source.
    form = client.get(f"/datasets/new?parent={job['id']}").text
    assert 'placeholder="pets v3"' in form and "v2 v2" not in form
    page = client.get(f"/datasets/{job['id']}").text
    assert f'new version of <a href="/datasets/{built["id"]}" id="parent-link">pets</a>' in page

    again = client.get(f"/api/datasets/{built['id']}").json()
    assert again["classes"] == built["classes"] and again["counts"] == built["counts"]
    assert file_digest(old_dir) == before


def test_append_refuses_a_path_outside_the_roots(shared, tmp_path, make_images):
    client, built = shared.client, shared.dataset
    outside = make_images(tmp_path / "elsewhere", {"cat": 2, "dog": 2})
    response = client.post(f"/api/datasets/{built['id']}/append", json={"train_folder": str(outside)})
    assert response.status_code == 403
    assert "TRAINYARD_DATA_ROOTS" in response.json()["detail"]


def test_append_to_an_unknown_dataset_is_404(shared):
    response = shared.client.post("/api/datasets/nope/append", json={"train_folder": str(shared.folder)})
    assert response.status_code == 404


# -- exploring ----------------------------------------------------------------------------------

def test_explorer_filters_by_class_and_pages(shared):
    client, built = shared.client, shared.dataset
    base = f"/api/datasets/{built['id']}/images"
    cats = client.get(base, params={"split": "train", "label": 0}).json()
    assert cats["total"] == built["counts"]["train"]["cat"]
    assert {image["label"] for image in cats["images"]} == {0}

    everything = client.get(base, params={"split": "train"}).json()
    assert everything["total"] == sum(built["counts"]["train"].values())
    assert {image["label"] for image in everything["images"]} == {0, 1}

    first = client.get(base, params={"split": "train", "offset": 0, "limit": 5}).json()["images"]
    second = client.get(base, params={"split": "train", "offset": 5, "limit": 5}).json()["images"]
    assert len(first) == len(second) == 5
    assert first + second == everything["images"][:10]
    past_end = client.get(base, params={"split": "train", "offset": 1000}).json()
    assert past_end["images"] == [] and past_end["total"] == everything["total"]

    sneaky = client.get(base, params={"split": "../dataset/train"})
    assert sneaky.status_code == 404  # a split is a name, never a path

    val = client.get(base, params={"split": "val"}).json()
    assert val["total"] == sum(built["counts"]["val"].values())
    assert client.get(base, params={"split": "test"}).status_code == 404


def test_stored_images_and_mean_are_pngs_of_the_dataset_size(shared):
    client, built = shared.client, shared.dataset
    base = f"/api/datasets/{built['id']}"
    image = client.get(f"{base}/images/train/0.png")
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert png_size(image.content) == (32, 24)
    mean = client.get(f"{base}/mean.png")
    assert mean.status_code == 200
    assert png_size(mean.content) == (32, 24)
    count = sum(built["counts"]["train"].values())
    assert client.get(f"{base}/images/train/{count}.png").status_code == 404


def test_stored_pixels_match_the_class_colours(shared):
    client, built = shared.client, shared.dataset
    """Cats are dark and dogs light in the generated images; the explorer must show that."""
    base = f"/api/datasets/{built['id']}"
    for label, dark in ((0, True), (1, False)):
        index = client.get(f"{base}/images", params={"label": label, "limit": 1}).json()["images"][0]["index"]
        pixels = np.asarray(Image.open(io.BytesIO(client.get(f"{base}/images/train/{index}.png").content)))
        assert (pixels.mean() < 100) == dark


def test_explorer_of_a_dataset_not_built_yet_is_409(tmp_path, client_for, make_images):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"])
    folder = make_images(settings.data_roots[0] / "images", {"cat": 2, "dog": 2})
    with client_for(settings, run_scheduler=False) as idle:  # nothing starts: the job stays queued
        job = create(idle, train_folder=str(folder))
        for url in ("images", "images/train/0.png", "mean.png"):
            response = idle.get(f"/api/datasets/{job['id']}/{url}")
            assert response.status_code == 409
            assert "not built yet" in response.json()["detail"]


# -- lists --------------------------------------------------------------------------------------

def test_list_dataset_reports_unparsable_lines_with_their_number(client, settings, wait_job, make_images):
    root = make_images(settings.data_roots[0] / "listed", {"cat": 4, "dog": 4})
    lines = [f"cat/cat_{i}.jpg 0" for i in range(4)] + [f"dog/dog_{i}.jpg 1" for i in range(4)]
    lines.insert(2, "just-one-field")  # line 3
    lines.insert(5, "cat/cat_0.jpg kitten")  # line 6
    lines.append("dog/dog_0.jpg 7")  # line 11: no class 7
    (root / "train.txt").write_text("\n".join(lines) + "\n")
    (root / "labels.txt").write_text("cat\ndog\n")

    dataset = build(client, wait_job, train_list=str(root / "train.txt"), encoding="png",
                    labels_file=str(root / "labels.txt"), image_root=str(root))
    assert dataset["classes"] == ["cat", "dog"]
    assert total(dataset["counts"]) == 8
    assert dataset["encoding"] == "png"
    stored = client.get(f"/api/datasets/{dataset['id']}/images/train/0.png")
    assert png_size(stored.content) == (32, 24)
    reasons = sorted(s["reason"] for s in dataset["skipped"])
    assert len(reasons) == 3
    assert reasons[0].startswith("line 11:")
    assert reasons[1].startswith("line 3:")
    assert reasons[2].startswith("line 6:") and "kitten" in reasons[2]


def test_list_paths_are_checked_against_the_roots_too(client, tmp_path, image_folder):
    outside = tmp_path / "labels.txt"
    outside.write_text("cat\ndog\n")
    listing = image_folder / "train.txt"
    listing.write_text("cat/cat_0.jpg 0\n")
    response = client.post("/api/datasets", json={"name": "x", "train_list": str(listing),
                                                  "labels_file": str(outside)})
    assert response.status_code == 403
    assert "TRAINYARD_DATA_ROOTS" in response.json()["detail"]


# -- delete -------------------------------------------------------------------------------------

def test_delete_removes_the_dataset_and_its_folder(client, settings, wait_job, make_images):
    folder = make_images(settings.data_roots[0] / "images", {"cat": 2, "dog": 2})
    built = build(client, wait_job, train_folder=str(folder), val_percent=0)
    job_dir = settings.jobs_dir / built["id"]
    assert (JobFolder(job_dir).dataset / "info.json").is_file()
    response = client.delete(f"/api/jobs/{built['id']}")
    assert response.status_code == 200
    assert not job_dir.exists()
    assert client.get(f"/api/datasets/{built['id']}").status_code == 404
    assert client.get("/api/jobs").json()["jobs"] == []
    assert client.delete(f"/api/jobs/{built['id']}").status_code == 404
    assert folder.is_dir(), "deleting a dataset must not touch the source images"
