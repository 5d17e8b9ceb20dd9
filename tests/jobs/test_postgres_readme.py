"""The README's PostgreSQL how-to, run as written against the session's PostgreSQL server: createdb,
the URL, then a CLI that queues a dataset build and a server that builds it, sharing the store.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_steps() -> list[str]:
    """The indented command lines of the README's PostgreSQL section."""
    section = README.read_text().split("### PostgreSQL", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def run_readme_steps(postgres, env: dict[str, str]) -> str:
    """createdb and the export, verbatim, in bash; returns the URL they set.

    The test server has its own socket folder and port, which libpq reads from PGHOST and PGPORT
    (createdb) and PGPORT (psycopg, for the README's localhost); its role is postgres, so USER and
    PGUSER are too. The role already exists: the createuser step is skipped.
    """
    steps = [s for s in readme_steps() if s.startswith(("createdb", "export"))]
    assert [s.split()[0] for s in steps] == ["createdb", "export"], readme_steps()
    script = "\n".join(["set -e", *steps, 'echo "$TRAINYARD_DATABASE_URL"'])
    done = subprocess.run(["bash", "-c", script], check=False, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_readme_how_to_gives_a_store_that_the_cli_and_the_server_share(
        postgres, tmp_path, monkeypatch, make_images, client_for, wait_job):
    env = {**os.environ, "PATH": f"{postgres.bin}:{os.environ['PATH']}", "USER": "postgres",
           "PGUSER": "postgres", "PGHOST": str(postgres.folder), "PGPORT": str(postgres.port)}
    url = run_readme_steps(postgres, env)
    assert re.fullmatch(r"postgresql\+psycopg://postgres@localhost/trainyard", url)
    monkeypatch.setenv("PGPORT", str(postgres.port))  # for psycopg in this process, as in bash

    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], database_url=url)
    cli_env = {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(tmp_path / "data"),
               "TRAINYARD_DATABASE_URL": url, "TRAINYARD_AUTH_TOKEN": ""}
    folder = make_images(tmp_path / "data" / "images", {"cat": 2, "dog": 2})
    queued = CliRunner().invoke(app, ["dataset", "create", "--name", "shared", "--train-folder", str(folder),
                                      "--size", "16x16", "--submit", "--json"], env=cli_env)
    assert queued.exit_code == 0, queued.output
    job_id = json.loads(queued.stdout)["id"]

    with client_for(settings) as client:  # the server's scheduler builds what the CLI queued
        assert wait_job(client, job_id)["status"] == "done"
    listed = CliRunner().invoke(app, ["jobs", "list", "--json"], env=cli_env)
    assert [(j["id"], j["status"]) for j in json.loads(listed.stdout)["jobs"]] == [(job_id, "done")]
