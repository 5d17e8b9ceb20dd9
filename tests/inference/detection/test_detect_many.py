"""Detect many: a folder, a list file or an uploaded archive through classify-many's job kind and
routes for a detection model (rows with boxes, the drawn image, the page), and ``trainyard detect``
on folders and lists, streamed: its memory stays flat in the number of images."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from PIL import Image

from tests.detection_data import draw_image, shapes_truth
from tests.detection_model import CLASSES, quick_detector
from trainyard.inference.detection.draw import COLOURS

SIZE = (192, 176)
THRESHOLD = 0.05  # the quick detector's scores are low: this keeps a few boxes an image


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    """One epoch on 16 images: these tests compare detect-many with detect, not with the truth."""
    return quick_detector(tmp_path_factory)


@pytest.fixture(scope="module")
def folder(detector):
    """Seven new images in a folder inside the data roots (one in a subfolder), and a broken file."""
    root = detector.settings.data_roots[0] / "many"
    (root / "more").mkdir(parents=True, exist_ok=True)
    classes = tuple(CLASSES)
    rng = np.random.default_rng(5)
    for i, shapes in enumerate(shapes_truth(8, SIZE, classes, seed=41)[1:]):
        Image.fromarray(draw_image(shapes, SIZE, classes, rng)).save(root / ("more" if i == 6 else ".") / f"im_{i}.png")
    (root / "zz_broken.png").write_bytes(b"not an image")
    return root


@pytest.fixture(scope="module")
def client(detector, client_for):
    with client_for(detector.settings) as test_client:
        yield test_client


def cli(detector, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, **detector.env(), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.fixture(scope="module")
def many_job(detector, client, folder, wait_job):
    response = client.post(f"/api/models/{detector.model_id}/classify-many",
                           json={"path": str(folder), "threshold": THRESHOLD})
    assert response.status_code == 201, response.text
    job = response.json()
    assert job["page"] == f"/models/{detector.model_id}/classify-many/{job['id']}"
    done = wait_job(client, job["id"], timeout=300)
    assert done["status"] == "done", done["error"]
    return job["id"]


def _rows(client, detector, job_id) -> list[dict]:
    page = client.get(f"/api/models/{detector.model_id}/classify-many/{job_id}/results?limit=100")
    assert page.status_code == 200, page.text
    return page.json()["rows"]


def test_a_folder_gives_each_image_its_boxes_as_detect_does(detector, client, folder, many_job):
    rows = _rows(client, detector, many_job)
    assert [r["image"] for r in rows] == ["im_0.png", "im_1.png", "im_2.png", "im_3.png", "im_4.png",
                                         "im_5.png", "zz_broken.png", "more/im_6.png"]  # a folder's files first
    broken = rows.pop(6)
    assert broken["boxes"] == [] and broken["error"]
    paths = [str(folder / r["image"]) for r in rows]
    one_by_one = client.post(f"/api/models/{detector.model_id}/detect?threshold={THRESHOLD}", json={"paths": paths})
    assert one_by_one.status_code == 200, one_by_one.text
    assert sum(len(r["boxes"]) for r in rows) > 0
    for row, expected in zip(rows, one_by_one.json()["results"]):
        assert row["error"] is None and {"label", "score", "box"} == set(row["boxes"][0]) if row["boxes"] else True
        assert [b["label"] for b in row["boxes"]] == [b["label"] for b in expected["boxes"]]
        assert np.allclose([b["box"] for b in row["boxes"]], [b["box"] for b in expected["boxes"]], atol=0.05)
        assert all(b["score"] >= THRESHOLD for b in row["boxes"])
    status = client.get(f"/api/models/{detector.model_id}/classify-many/{many_job}").json()
    summary = status["summary"]
    assert summary["task"] == "detection" and summary["images"] == 8 and summary["errors"] == 1
    assert summary["boxes"] == sum(len(r["boxes"]) for r in rows)
    assert sum(summary["boxes_per_class"].values()) == summary["boxes"]


def test_the_drawn_image_shows_the_boxes(detector, client, many_job):
    rows = _rows(client, detector, many_job)
    row = next(r for r in rows if r["boxes"])
    url = f"/api/models/{detector.model_id}/classify-many/{many_job}/images/{row['row']}"
    drawn = np.asarray(Image.open(io.BytesIO(client.get(f"{url}?boxes=true").content)).convert("RGB"))
    thumb = Image.open(io.BytesIO(client.get(url).content))
    original = np.asarray(Image.open(detector.settings.data_roots[0] / "many" / row["image"]).convert("RGB"))
    assert drawn.shape == original.shape and max(thumb.size) == 160
    x1, y1, x2, y2 = (min(max(round(v), 0), limit - 1) for v, limit in zip(row["boxes"][0]["box"], SIZE * 2))
    edge = drawn[y1, x1:x2 + 1]  # the top edge of the best box: outlined in a class colour
    colours = {tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in COLOURS}
    assert any(tuple(pixel) in colours for pixel in edge)
    assert (drawn != original).any(axis=2).sum() > 2 * (x2 - x1)


def test_the_page_is_the_detection_table_and_detect_offers_many(detector, client, many_job):
    page = client.get(f"/models/{detector.model_id}/classify-many/{many_job}")
    assert page.status_code == 200 and f"detect-many {many_job}" in page.text and "<th>Boxes</th>" in page.text
    detect_page = client.get(f"/models/{detector.model_id}/classify")
    assert 'id="many-form"' in detect_page.text
    assert f'/models/{detector.model_id}/classify-many/{many_job}"' in detect_page.text


def test_an_uploaded_archive_and_a_refused_split(detector, client, folder, wait_job):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("im_0.png", "im_1.png"):
            tar.add(folder / name, arcname=f"inside/{name}")
    response = client.post(f"/api/models/{detector.model_id}/classify-many", data={"threshold": "0.9"},
                           files={"file": ("two.tar.gz", buf.getvalue(), "application/gzip")})
    assert response.status_code == 201, response.text
    assert wait_job(client, response.json()["id"], timeout=300)["status"] == "done"
    rows = _rows(client, detector, response.json()["id"])
    assert [r["image"] for r in rows] == ["im_0.png", "im_1.png"]  # below the archive's one top folder
    assert all(b["score"] >= 0.9 for r in rows for b in r["boxes"])
    split = client.post(f"/api/models/{detector.model_id}/classify-many", json={"split": "val"})
    assert split.status_code == 400 and "evaluate" in split.json()["detail"]


def test_the_cli_reads_folders_and_lists(detector, folder, tmp_path):
    listed = tmp_path / "list.txt"
    listed.write_text(f"{folder / 'im_0.png'}\nmore/im_6.png\n")
    (folder / "list.txt").write_text("im_1.png\nmore/im_6.png\n")
    done = cli(detector, "detect", detector.model_id, str(folder / "more"), str(folder / "list.txt"),
               str(folder / "im_2.png"), "--json", "--threshold", str(THRESHOLD))
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)["results"]
    assert [r["image"] for r in results] == [str(folder / p) for p in ("more/im_6.png", "im_1.png",
                                                                       "more/im_6.png", "im_2.png")]
    assert results[0] == results[2]
    broken = cli(detector, "detect", detector.model_id, str(folder))
    assert broken.returncode == 1 and "zz_broken.png" in broken.stderr
    assert broken.stdout.count(" boxes\n") == 7  # each readable image's line, the broken one on stderr


def peak_rss_kib(args: list[str], env: dict) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "trainyard.cli.main", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return usage.ru_maxrss, out


@pytest.mark.slow
def test_cli_detect_memory_is_flat_in_the_number_of_images(detector, tmp_path):
    """Hard links to one 480x480 PNG (675 KiB decoded): a detect that decoded every image of
    the folder before detecting would hold ~650 MiB more at 1,000 images than at 20. (A high
    threshold: the quick detector's many weak boxes would make the JSON itself grow.)"""
    few, many = tmp_path / "few", tmp_path / "many"
    few.mkdir()
    many.mkdir()
    source = tmp_path / "source.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (480, 480, 3), dtype=np.uint8)).save(source)
    for i in range(1000):
        os.link(source, many / f"{i:04d}.png")
        if i < 20:
            os.link(source, few / f"{i:04d}.png")
    env = {**os.environ, **detector.env(), "OMP_NUM_THREADS": "1"}
    small, out_small = peak_rss_kib(["detect", detector.model_id, str(few), "--json", "--threshold", "0.9"], env)
    large, out_large = peak_rss_kib(["detect", detector.model_id, str(many), "--json", "--threshold", "0.9"], env)
    assert len(json.loads(out_small)["results"]) == 20
    assert len(json.loads(out_large)["results"]) == 1000
    assert large <= 1.2 * small, f"peak RSS {large} KiB at 1000 images vs {small} KiB at 20"
