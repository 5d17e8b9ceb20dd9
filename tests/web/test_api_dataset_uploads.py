"""Datasets from uploaded archives: zips and tars of class folders build, unsafe members, oversize
and empty uploads are refused with a clear error and leave nothing behind."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from trainyard.core.paths import JobFolder
from trainyard.settings import Settings

SIZE = {"width": 32, "height": 24}  # as test_api_datasets.py's: not square


def archive_members(root: Path) -> list[tuple[str, bytes]]:
    return [(p.relative_to(root.parent).as_posix(), p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()]


def zip_bytes(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buf.getvalue()


def tar_bytes(members: list[tuple[str, bytes]], extra: tarfile.TarInfo | None = None,
              extra_data: bytes = b"") -> bytes:
    """A .tar.gz of the members, with ``extra`` added in the middle (after the first member)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i, (name, data) in enumerate(members):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
            if i == 0 and extra is not None:
                tf.addfile(extra, io.BytesIO(extra_data) if extra.isfile() else None)
    return buf.getvalue()


def upload(client, name: str, data: bytes, **spec):
    return client.post("/api/datasets/upload", files={"file": (name, data, "application/octet-stream")},
                       data={"spec": json.dumps({"name": "uploaded", **SIZE, **spec})})


def test_uploaded_zips_of_class_folders_build(client, settings, wait_job, tmp_path, make_images):
    train = make_images(tmp_path / "pets", {"cat": 5, "dog": 5})
    val = make_images(tmp_path / "val" / "pets", {"cat": 2, "dog": 3, "eel": 1}, seed=2)
    response = client.post("/api/datasets/upload", data={"spec": json.dumps({"name": "uploaded", **SIZE})},
                           files={"file": ("pets.zip", zip_bytes(archive_members(train))),
                                  "val_file": ("val.zip", zip_bytes(archive_members(val)))})
    assert response.status_code == 201, response.text
    job = wait_job(client, response.json()["id"])
    assert job["status"] == "done", job["error"]
    dataset = client.get(f"/api/datasets/{job['id']}").json()
    assert dataset["classes"] == ["cat", "dog"]
    assert dataset["counts"] == {"train": {"cat": 5, "dog": 5}, "val": {"cat": 2, "dog": 3}}
    assert [Path(s["path"]).name for s in dataset["skipped"]] == ["eel"]
    assert "not in the training set" in dataset["skipped"][0]["reason"]
    assert not (settings.jobs_dir / job["id"] / "extract.tmp").exists()
    # The dataset holds the images now: the uploaded archives are not kept.
    assert list(settings.uploads_dir.iterdir()) == []


def _bad_member(kind: str, tmp_path: Path) -> tuple[tarfile.TarInfo, str]:
    """A refused tar member and a file name that would show where it was written."""
    if kind == "dotdot":
        info = tarfile.TarInfo("../../../evil_dotdot.txt")
        info.size = 4
        return info, "evil_dotdot.txt"
    if kind == "absolute":
        info = tarfile.TarInfo(str(tmp_path / "evil_absolute.txt"))
        info.size = 4
        return info, "evil_absolute.txt"
    info = tarfile.TarInfo("pets/cat/evil_link.jpg")
    info.type = tarfile.SYMTYPE
    info.linkname = "/etc/passwd"
    return info, "evil_link.jpg"


def test_archives_with_unsafe_members_fail_naming_the_member(client, settings, wait_job, tmp_path, make_images):
    folder = make_images(tmp_path / "pets", {"cat": 3, "dog": 3})
    jobs = {}
    for kind in ("dotdot", "absolute", "symlink"):
        bad, written_name = _bad_member(kind, tmp_path)
        response = upload(client, f"{kind}.tar.gz", tar_bytes(archive_members(folder), bad, b"evil"))
        assert response.status_code == 201, response.text
        jobs[kind] = (response.json()["id"], bad.name, written_name)
    for kind, (job_id, member, written_name) in jobs.items():
        job = wait_job(client, job_id)
        assert job["status"] == "failed", kind
        assert member in job["error"] and "refused" in job["error"], job["error"]
        assert not list(tmp_path.rglob(written_name)), f"the refused {kind} member was written"
        job_dir = settings.jobs_dir / job_id
        assert not (JobFolder(job_dir).dataset).exists()
        assert not (job_dir / "extract.tmp").exists(), "the partial extraction was left behind"


def test_upload_over_the_size_limit_is_413_and_leaves_nothing(tmp_path, client_for):
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], max_upload_mb=1)
    with client_for(settings, run_scheduler=False) as small_client:
        too_big = np.random.default_rng(0).bytes(3 * 2**19)  # 1.5 MiB
        response = upload(small_client, "big.zip", too_big)
        assert response.status_code == 413
        assert "1 MiB" in response.json()["detail"]
        assert small_client.get("/api/jobs").json()["jobs"] == []
    assert [p for p in settings.uploads_dir.rglob("*") if p.is_file()] == []


def test_a_huge_upload_is_refused_before_its_body_is_read(tmp_path):
    """Refused on its Content-Length: not spooled to disk first (the client can stop sending)."""
    import asyncio

    from trainyard.web.app import create_app

    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], max_upload_mb=1)
    app = create_app(settings, run_scheduler=False)
    reads, sent = [], []

    async def receive():
        reads.append(1)
        return {"type": "http.request", "body": b"-" * 1024, "more_body": len(reads) < 3}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/api/datasets/upload", "raw_path": b"/api/datasets/upload",
             "root_path": "", "query_string": b"", "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
             "headers": [(b"host", b"testserver"), (b"content-type", b"multipart/form-data; boundary=xyz"),
                         (b"authorization", f"Bearer {app.state.auth_token}".encode()),
                         (b"content-length", str(50 * 2**30).encode())]}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413
    assert b"TRAINYARD_MAX_UPLOAD_MB" in b"".join(m.get("body", b"") for m in sent)
    assert reads == []


def test_a_refused_upload_leaves_no_file_behind(client, settings, image_folder, tmp_path, make_images):
    folder = make_images(tmp_path / "pets", {"cat": 2, "dog": 2})
    archive = zip_bytes(archive_members(folder))
    response = upload(client, "pets.zip", archive, train_folder=str(image_folder))  # two sources
    assert response.status_code == 422
    assert "exactly one training source" in response.json()["detail"]
    bad_json = client.post("/api/datasets/upload", files={"file": ("pets.zip", archive)}, data={"spec": "[1]"})
    assert bad_json.status_code == 422
    assert [p for p in settings.uploads_dir.rglob("*") if p.is_file()] == []
    assert client.get("/api/jobs").json()["jobs"] == []


def test_empty_upload_is_refused(client):
    response = upload(client, "empty.zip", b"")
    assert response.status_code == 400
    assert "empty" in response.json()["detail"]


def test_upload_that_is_not_an_archive_fails_with_a_clear_error(client, wait_job):
    response = upload(client, "photo.zip", b"this is not a zip file at all")
    job = wait_job(client, response.json()["id"])
    assert job["status"] == "failed"
    assert "not a zip or tar archive" in job["error"]


# -- append -------------------------------------------------------------------------------------
