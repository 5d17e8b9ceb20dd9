"""POST /api/models/{id}/export (issue 44): one format's archive written as `trainyard export
--format` writes it, answered with the check's figures and a download address; refusals (an
unknown format, a missing runtime, a custom network beyond onnx) are clear 422s."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from trainyard.jobs.scheduling.resources import Pools
from trainyard.web.app import create_app
from trainyard.web.routers import export_formats

STATIC = Path(__file__).parents[2] / "src" / "trainyard" / "web" / "static"


@pytest.fixture(scope="module")
def client(trained):
    app = create_app(trained.settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]), run_scheduler=False)
    with TestClient(app) as test_client:
        yield test_client


def manifest_of(archive: bytes) -> dict:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/manifest.json"))
        return json.load(tar.extractfile(member))


def test_an_int8_export_answers_its_figures_and_downloads(client, trained):
    url = f"/api/models/{trained.model_id}/export"
    assert client.get(f"{url}/onnx-int8").status_code == 404  # nothing exported yet
    answer = client.post(url, json={"format": "onnx-int8", "calibration_images": 16})
    assert answer.status_code == 200, answer.text
    doc = answer.json()
    assert doc["export_format"] == "onnx-int8" and doc["epoch"] == 3
    assert doc["top1_agreement"] >= 0.9  # three flat colours: the int8 copy answers as PyTorch does
    assert doc["size_bytes"] > 0 and doc["reference_size_bytes"] > 0 and doc["latency_ms"] > 0
    assert doc["download"] == f"{url}/onnx-int8?epoch=3"
    archive = client.get(doc["download"])
    assert archive.status_code == 200 and archive.headers["content-type"] == "application/gzip"
    assert "-onnx-int8.tar.gz" in archive.headers["content-disposition"]
    assert len(archive.content) == doc["archive_bytes"]
    manifest = manifest_of(archive.content)
    assert manifest["export_format"] == "onnx-int8" and manifest["top1_agreement"] == doc["top1_agreement"]
    kept = list((trained.ctx.manager.folder(trained.model_id).path).rglob("*-onnx-int8.tar.gz"))
    assert len(kept) == 1  # in the job's folder


def test_unknown_formats_missing_runtimes_and_custom_networks_are_clear_422s(client, trained, monkeypatch):
    url = f"/api/models/{trained.model_id}/export"
    unknown = client.post(url, json={"format": "nope"})
    assert unknown.status_code == 422 and "unknown export format 'nope'" in unknown.json()["detail"]
    assert "onnx-int8" in unknown.json()["detail"] and "torchscript" in unknown.json()["detail"]
    assert "NVIDIA GPU" in client.post(url, json={"format": "tensorrt"}).json()["detail"]
    from trainyard.inference.exporters import base

    monkeypatch.setattr(base.importlib.util, "find_spec", lambda name: None)  # nothing installed
    missing = client.post(url, json={"format": "onnx-int8"})
    assert missing.status_code == 422 and "not installed" in missing.json()["detail"]
    assert "pip install" in missing.json()["detail"]
    monkeypatch.undo()
    monkeypatch.setattr(export_formats, "recorded_user_code", lambda ctx, model_id: True)
    custom = client.post(url, json={"format": "torchscript"})
    assert custom.status_code == 422 and "custom network" in custom.json()["detail"]
    assert "onnx only" in custom.json()["detail"]
    assert client.post(url, json={"format": "onnx", "epoch": 99}).status_code == 404  # no such snapshot
    assert client.get(f"{url}/..%2F..").status_code in (404, 422)


def test_the_formats_are_listed_with_what_runs_here(client):
    formats = {f["name"]: f for f in client.get("/api/export-formats").json()["formats"]}
    assert formats["onnx"]["available"] and formats["onnx-int8"]["available"]
    assert not formats["tensorrt"]["available"] and "NVIDIA GPU" in formats["tensorrt"]["install"]
    assert "trainyard[coreml]" in formats["coreml"]["install"] and "Apple" in formats["coreml"]["install"]
    assert formats["onnx"]["checked_here"]
    assert formats["coreml"]["checked_here"] == (sys.platform == "darwin" and formats["coreml"]["available"])


def test_the_model_page_has_an_export_panel_whose_figures_read_as_the_answer(client, trained):
    page = client.get(f"/models/{trained.model_id}").text
    assert 'id="export-form"' in page and 'data-task="classification"' in page and 'data-custom="false"' in page
    assert '<script type="module" src="/static/model_export.js">' in page
    doc = client.post(f"/api/models/{trained.model_id}/export", json={"format": "onnx"}).json()
    if shutil.which("node") is None:
        pytest.skip("node runs the panel's module")
    script = ("import { exportFigures } from './export_figures.js';"
              f"console.log(JSON.stringify(exportFigures({json.dumps(doc)})));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=STATIC, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    rows = dict(json.loads(out.stdout))
    assert rows["Format"].startswith("onnx") and rows["Snapshot"].startswith("epoch 3")
    assert rows["Top-1 agreement with PyTorch"].startswith("100.0%")  # fp32: the same answers
    assert "MiB (fp32" in rows["Size"] and "ms/image" in rows["Latency, 1 thread"]


def test_a_coreml_export_off_apple_machines_answers_that_it_was_not_checked(client, trained):
    pytest.importorskip("coremltools")
    from trainyard.inference.exporters import coreml_package

    if coreml_package.runs_here():
        pytest.skip("a Mac checks Core ML as the other formats")
    doc = client.post(f"/api/models/{trained.model_id}/export", json={"format": "coreml"}).json()
    assert doc["checked"] is False and "Apple" in doc["not_checked_because"], doc
    assert doc.get("top1_agreement") is None and doc.get("latency_ms") is None and doc["size_bytes"] > 0
    assert doc["manifest"]["checked"] is False
    if shutil.which("node") is None:
        pytest.skip("node runs the panel's module")
    script = ("import { exportFigures } from './export_figures.js';"
              f"console.log(JSON.stringify(exportFigures({json.dumps(doc)})));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=STATIC, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    rows = dict(json.loads(out.stdout))
    assert rows["Checked against PyTorch"].startswith("no: Core ML runs models only on Apple machines")
    assert "Top-1 agreement with PyTorch" not in rows and "MiB (fp32" in rows["Size"]
