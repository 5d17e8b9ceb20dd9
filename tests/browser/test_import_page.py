"""Importing a downloaded archive from the home page gives a model page of a done model."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.inference.deploy_helpers import make_checkpoint_job
from tests.live_server import BROWSER_HEADERS
from trainyard.inference.export import export_model

pytestmark = pytest.mark.browser


def test_the_home_page_imports_an_archive_as_a_model(live_server, page, tmp_path):
    job_dir = make_checkpoint_job(tmp_path / "exported-job")
    archive = tmp_path / "lenet.tar.gz"
    export_model(job_dir, None, archive)

    page.goto(live_server.url + "/")
    page.click("text=Import a downloaded model")
    page.set_input_files("#import-form input[type=file]", str(archive))
    page.fill("#import-form input[name=name]", "imported from the browser")
    page.click("#import-form button[type=submit]")
    page.wait_for_url("**/models/*")
    assert page.inner_text("h1") == "imported from the browser"

    model_id = page.url.rstrip("/").rsplit("/", 1)[1]
    asked = urllib.request.Request(f"{live_server.url}/api/models/{model_id}", headers=BROWSER_HEADERS)
    with urllib.request.urlopen(asked, timeout=30) as response:
        model = json.loads(response.read())
    assert model["status"] == "done" and model["snapshots"] == [1]


def test_a_file_that_is_no_archive_shows_the_reason(live_server, page, tmp_path):
    bogus = tmp_path / "notes.tar.gz"
    bogus.write_text("not an archive")
    page.goto(live_server.url + "/")
    page.click("text=Import a downloaded model")
    page.set_input_files("#import-form input[type=file]", str(bogus))
    page.click("#import-form button[type=submit]")
    page.wait_for_function("document.getElementById('import-error').textContent.length > 0")
    assert "archive" in page.inner_text("#import-error").lower()
    assert page.url.rstrip("/") == live_server.url
