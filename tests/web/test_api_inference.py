"""/api/models/{id}/classify, classify-many, top-N and evaluate, end to end on a trained model."""

from __future__ import annotations

import csv
import io
import tarfile
import time

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from tests.trained_model import colour_image
from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app


@pytest.fixture(scope="module")
def client(trained):
    app = create_app(trained.settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    with TestClient(app) as test_client:
        yield test_client


def png_bytes(image: Image.Image, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt)
    return buf.getvalue()


def uploads(*named: tuple[str, bytes]):
    return [("images", (name, data, "application/octet-stream")) for name, data in named]


def wait_done(client, job_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in ("done", "failed", "aborted"):
            assert job["status"] == "done", job["error"]
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not end")


def test_classify_uploads_gets_each_class_right(client, trained):
    files = [(f"{name}.png", png_bytes(colour_image(name, 11))) for name in trained.classes]
    response = client.post(f"/api/models/{trained.model_id}/classify?top=2", files=uploads(*files))
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["epoch"] == 3 and doc["classes"] == trained.classes
    assert [r["image"] for r in doc["results"]] == [f"{n}.png" for n in trained.classes]
    for result, name in zip(doc["results"], trained.classes):
        assert set(result) == {"image", "predictions"}
        assert len(result["predictions"]) == 2 and result["predictions"][0][0] == name
        assert 0 <= result["predictions"][1][1] <= result["predictions"][0][1] <= 1


def test_classify_paths_inside_the_data_roots_and_any_epoch(client, trained):
    path = next((trained.images / "red").iterdir())
    doc = client.post(f"/api/models/{trained.model_id}/classify?epoch=1", json={"paths": [str(path)]}).json()
    assert doc["epoch"] == 1 and doc["results"][0]["image"] == str(path)
    assert client.post(f"/api/models/{trained.model_id}/classify", json={"paths": ["/etc/hostname"]}).status_code == 403
    missing = client.post(f"/api/models/{trained.model_id}/classify", json={"paths": [str(trained.images / "no.png")]})
    assert missing.status_code == 404


def test_classify_with_visualizations_and_saliency(client, trained):
    response = client.post(f"/api/models/{trained.model_id}/classify?visualize=true",
                           files=uploads(("light.jpg", png_bytes(colour_image("light", 4), "JPEG"))))
    result = response.json()["results"][0]
    assert result["predictions"][0][0] == "light"
    layers = result["visualization"]["layers"]
    assert [layer["name"] for layer in layers[:3]] == ["input", "features.0", "features.1"]
    assert layers[1]["weight_image"].startswith("data:image/png;base64,")
    assert len(layers[1]["activations"]["histogram"]["counts"]) == 20
    assert result["saliency"]["class"] == "light" and result["saliency"]["image"].startswith("data:image/png")


@pytest.mark.parametrize("name, data, status, words", [
    ("notes.txt", b"this is text", 422, "not a usable image"),
    ("cut.jpg", None, 422, "corrupt or truncated"),
    ("empty.png", b"", 422, "empty file"),
])
def test_bad_uploads_are_clear_422s(client, trained, name, data, status, words):
    if data is None:
        data = png_bytes(colour_image("red", 1), "JPEG")[:300]
    response = client.post(f"/api/models/{trained.model_id}/classify", files=uploads((name, data)))
    assert response.status_code == status and words in response.json()["detail"] and name in response.json()["detail"]


def test_bad_requests(client, trained):
    url = f"/api/models/{trained.model_id}/classify"
    image = uploads(("a.png", png_bytes(colour_image("red", 2))))
    epoch = client.post(url + "?epoch=42", files=image)
    assert epoch.status_code == 404 and "epochs with one: 1, 2, 3" in epoch.json()["detail"]
    assert client.post(url + "?top=0", files=image).status_code == 422
    assert client.post(url, json={}).status_code == 422
    assert client.post("/api/models/nope/classify", files=image).status_code == 404
    assert client.post(f"/api/models/{trained.dataset_id}/classify", files=image).status_code == 404


def test_a_model_without_snapshot_is_a_409(client, trained):
    ctx = client.app.state.ctx
    # Owned by this process, so the scheduler leaves it queued: a model with no checkpoint yet.
    job = ctx.manager.create("model", "not yet", {"name": "not yet"}, needs={"pool": "cpu"}, foreground=True)
    image = png_bytes(colour_image("red", 2))
    response = client.post(f"/api/models/{job.id}/classify", files=uploads(("a.png", image)))
    assert response.status_code == 409 and "no snapshot yet" in response.json()["detail"]
    assert client.post(f"/api/models/{job.id}/evaluate", json={"split": "val"}).status_code == 409
    assert client.get(f"/models/{job.id}/classify").status_code == 200  # the page explains it


def test_classify_many_uploaded_list_with_labels(client, trained, tmp_path):
    red = sorted((trained.images / "red").iterdir())[:3]
    dark = sorted((trained.images / "dark").iterdir())[:2]
    lines = [f"red/{p.name} red" for p in red] + [f"dark/{p.name} 0" for p in dark]
    lines += [f"red/{red[0].name} dark", "missing.jpg light"]  # one wrong label, one missing file
    response = client.post(f"/api/models/{trained.model_id}/classify-many",
                           files={"file": ("list.txt", "\n".join(lines).encode(), "text/plain")},
                           data={"image_root": str(trained.images), "top": "2"})
    assert response.status_code == 201, response.text
    job = response.json()
    assert job["kind"] == "classify-many" and job["page"].endswith(job["id"])
    wait_done(client, job["id"])
    api = f"/api/models/{trained.model_id}/classify-many/{job['id']}"
    summary = client.get(api).json()["summary"]
    assert summary["confusion"] == [[2, 0, 1], [0, 0, 0], [0, 0, 3]]  # hand count: rows are labels
    assert summary["accuracy"] == pytest.approx(5 / 6) and summary["errors"] == 1
    page = client.get(api + "/results?offset=4&limit=10").json()
    assert page["total"] == 7 and [r["row"] for r in page["rows"]] == [4, 5, 6]
    assert page["rows"][2]["error"] and page["rows"][1]["label"] == "dark"
    table = list(csv.DictReader(io.StringIO(client.get(api + "/results.csv").text)))
    assert len(table) == 7 and table[0]["prediction_1"] == "red" and "confidence_2" in table[0]
    thumb = client.get(api + "/images/0")
    assert thumb.status_code == 200 and Image.open(io.BytesIO(thumb.content)).size == (40, 30)
    assert client.get(api + "/images/99").status_code == 404
    negative = client.get(api + "/images/-1")  # was a 500 (a negative offset into the results)
    assert negative.status_code == 422 and "greater than or equal to 0" in negative.text


def test_a_negative_log_size_is_a_422(client, trained):
    for size in (-1, -(2**63)):  # the second was a 500: a seek past what a C long holds
        response = client.get(f"/api/jobs/{trained.model_id}/log", params={"max_bytes": size})
        assert response.status_code == 422 and "greater than or equal to 0" in response.text
    assert client.get(f"/api/jobs/{trained.model_id}/log", params={"max_bytes": 0}).status_code == 200


def test_top_n_of_an_uploaded_archive(client, trained, tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in trained.classes:
            for i in range(3):
                data = png_bytes(colour_image(name, 20 + i))
                info = tarfile.TarInfo(f"batch/{name}/{i}.png")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    response = client.post(f"/api/models/{trained.model_id}/top-n", data={"top_n": "2"},
                           files={"file": ("batch.tar.gz", buf.getvalue(), "application/gzip")})
    assert response.status_code == 201, response.text
    job = response.json()
    assert job["page"].endswith("#top-n")
    wait_done(client, job["id"])
    api = f"/api/models/{trained.model_id}/classify-many/{job['id']}"
    classes = client.get(api + "/top-n").json()["classes"]
    assert [c["class"] for c in classes] == trained.classes
    for entry in classes:
        assert len(entry["images"]) == 2 and all(im["image"].startswith(entry["class"] + "/") for im in entry["images"])
        assert client.get(f"{api}/images/{entry['images'][0]['row']}").status_code == 200
    assert client.get(api).json()["summary"]["accuracy"] == 1.0  # class folders label the images
    assert client.get(f"/models/{trained.model_id}/classify-many/{job['id']}").status_code == 200


def test_classify_many_refusals(client, trained):
    url = f"/api/models/{trained.model_id}/classify-many"
    assert client.post(url, json={"path": "/etc"}).status_code == 403
    no_source = client.post(url, json={})
    # An invalid spec is a 422, as for model jobs (core/errors.py validated), not a 400.
    assert no_source.status_code == 422 and "give exactly one source" in no_source.json()["detail"]
    assert client.post(url, json={"path": str(trained.images), "top": 0}).status_code == 422
    assert client.post(url, json={"path": str(trained.images), "epoch": 9}).status_code == 404


def test_evaluate_matches_training_validation(client, trained):
    response = client.post(f"/api/models/{trained.model_id}/evaluate", json={"split": "val", "epoch": 2})
    assert response.status_code == 201, response.text
    job = response.json()
    wait_done(client, job["id"])
    doc = client.get(f"/api/models/{trained.model_id}/evaluations/{job['id']}").json()
    evaluation = doc["evaluation"]
    model = client.get(f"/api/models/{trained.model_id}").json()
    reported = dict(model["metrics"]["val_accuracy"])[2]
    assert 100 * evaluation["accuracy"] == pytest.approx(reported)
    assert evaluation["images"] == 18 and sum(map(sum, evaluation["confusion"])) == 18
    assert [r["class"] for r in evaluation["per_class"]] == trained.classes
    assert {"precision", "recall", "f1", "support"} <= set(evaluation["per_class"][0])
    assert doc["split"] == "val" and doc["epoch"] == 2
    listed = client.get(f"/api/models/{trained.model_id}/inference").json()["jobs"]
    assert job["id"] in [j["id"] for j in listed]
    assert client.get(f"/models/{trained.model_id}/evaluations/{job['id']}").status_code == 200
    missing = client.post(f"/api/models/{trained.model_id}/evaluate", json={"split": "test"})
    assert missing.status_code == 400 and "no test split" in missing.json()["detail"]


def test_classify_page(client, trained):
    page = client.get(f"/models/{trained.model_id}/classify?epoch=2")
    assert page.status_code == 200
    assert "Show visualizations and statistics" in page.text and 'value="2" selected' in page.text
    assert client.get("/models/nope/classify").status_code == 404
