"""Shared fixtures: a temporary trainyard home, a context, an API client and generated images."""

from __future__ import annotations

import os
import time
from pathlib import Path

import fastapi.testclient
import numpy as np
import pytest
import starlette.testclient
from PIL import Image

from tests import expected_features
from trainyard.jobs.context import open_context
from trainyard.jobs.scheduling.resources import Pools
from trainyard.settings import Settings

# Fixtures several test folders share: the loopback weights server and weight files.
pytest_plugins = ["tests.weights.fixtures"]
# TestClient sends "Host: testserver"; the server answers only to the names it is bound to.
os.environ.setdefault("TRAINYARD_ALLOWED_HOSTS", "testserver")


class CredentialedClient(starlette.testclient.TestClient):
    """A TestClient that sends its app's credential (web/auth.py: every door needs it, on
    localhost too), so the suite's clients keep working; ``credential=False`` sends none, as a
    stranger would."""

    def __init__(self, app, *args, credential: bool = True, **kwargs):
        super().__init__(app, *args, **kwargs)
        token = getattr(getattr(app, "state", None), "auth_token", None)
        if credential and token:
            self.headers["Authorization"] = f"Bearer {token}"


# Installed before any test module imports it (``from fastapi.testclient import TestClient``).
fastapi.testclient.TestClient = CredentialedClient  # type: ignore[misc]
starlette.testclient.TestClient = CredentialedClient  # type: ignore[misc]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings with home and data roots inside the test's temporary folder."""
    return Settings(home=tmp_path / "home", data_roots=[tmp_path / "data"], abort_grace_s=3.0)


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """The one model trained through real jobs (tests/trained_model.py), built once a session."""
    from tests.trained_model import trained_model

    return trained_model(tmp_path_factory)


@pytest.fixture
def ctx(settings):
    return open_context(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))


def make_image_folder(root: Path, classes: dict[str, int] | None = None, size=(40, 30),
                      seed: int = 0) -> Path:
    """Class folders of learnable JPEGs: class i is a distinct flat colour plus noise."""
    rng = np.random.default_rng(seed)
    classes = classes or {"cat": 10, "dog": 10}
    palette = [(30, 30, 30), (220, 220, 220), (200, 40, 40), (40, 200, 40), (40, 40, 200)]
    for index, (name, count) in enumerate(classes.items()):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            base = np.array(palette[index % len(palette)], dtype=np.float32)
            pixels = base + rng.normal(0, 12, (size[1], size[0], 3))
            Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(folder / f"{name}_{i}.jpg")
    return root


def make_image_folder_with_bad_files(root: Path) -> Path:
    """Two classes of ten images, plus one corrupt and one non-image file, and a text file that
    does not claim to be an image (counted as "not images", not listed)."""
    make_image_folder(root)
    (root / "cat" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (root / "dog" / "notes.png").write_text("this is text, not an image")
    (root / "dog" / "README.txt").write_text("where these pictures came from")
    return root


@pytest.fixture
def image_folder(settings) -> Path:
    """data/images with two classes of ten images, plus one corrupt and one non-image file."""
    return make_image_folder_with_bad_files(settings.data_roots[0] / "images")


@pytest.fixture(scope="session")
def make_images_with_bad_files():
    """``make_images_with_bad_files(root)``: what the image_folder fixture holds, anywhere."""
    return make_image_folder_with_bad_files


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.1):
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


FINAL_STATUSES = ("done", "failed", "aborted")


def tick_until(ctx, job_id, until, timeout: float = 60.0, interval: float = 0.1):
    """Tick the manager until the job's status is in ``until`` (a set of statuses) or ``until(job)``
    holds (a predicate); the job then. Fails the test after ``timeout``: bound it generously, as a
    busy 2-core machine starts a torch process in anything from 5 to 90 seconds."""
    reached = until if callable(until) else (lambda job: job.status in until)

    def ticked():
        ctx.manager.tick()
        job = ctx.store.get_job(job_id)
        return job if reached(job) else None

    return wait_for(ticked, timeout, interval)


def open_client(settings: Settings, run_scheduler: bool = True, credential: bool = True):
    """A TestClient of the app; use it as a context manager so the lifespan (scheduler) runs.
    ``credential=False``: a client that sends no credential (a stranger's)."""
    from fastapi.testclient import TestClient

    from trainyard.web.app import create_app

    pools = Pools(dataset_slots=2, cpu_slots=1, gpus=[])
    return TestClient(create_app(settings, pools=pools, run_scheduler=run_scheduler), credential=credential)


@pytest.fixture
def client(settings):
    """An API client whose app runs the scheduler (jobs really build, in subprocesses)."""
    with open_client(settings) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def client_for():
    """``with client_for(settings, run_scheduler=True) as client:`` for other settings or scopes."""
    return open_client


def wait_job_ended(client, job_id: str, timeout: float = 60.0) -> dict:
    """Poll GET /api/jobs/{id} until the job has ended; return its final JSON."""
    def ended():
        doc = client.get(f"/api/jobs/{job_id}").json()
        return doc if doc["status"] in FINAL_STATUSES else None

    return wait_for(ended, timeout)


# Test modules cannot reliably ``from conftest import ...`` (every conftest.py outside a package
# is a module named "conftest"), so the helpers are also handed out as fixtures.
@pytest.fixture(scope="session")
def wait_job():
    """``wait_job(client, job_id)``: the job's JSON once it has ended."""
    return wait_job_ended


@pytest.fixture(scope="session")
def make_images():
    """``make_images(root, {"cat": 3, ...}, size=(w, h), seed=0)``: class folders of JPEGs."""
    return make_image_folder


@pytest.fixture
def cli_env(settings) -> dict[str, str]:
    """Environment that points the CLI (which reads TRAINYARD_* itself) at the test's folders."""
    return {"TRAINYARD_HOME": str(settings.home),
            "TRAINYARD_DATA_ROOTS": ",".join(str(r) for r in settings.data_roots),
            "TRAINYARD_DATABASE_URL": settings.database_url,
            "TRAINYARD_AUTH_TOKEN": ""}


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server for the whole session (tests/postgres_server.py); skips without one.

    ``postgres.new_database()`` gives each test a fresh database's URL.
    """
    from tests.postgres_server import Unavailable, start_server

    try:
        server = start_server()
    except Unavailable as exc:
        pytest.skip(str(exc))
    yield server
    server.stop()


# `make test-fast` deselects what these marks name (pyproject's markers say what each means). A
# test is marked by its folder, by the fixtures it asks for, or by what its module calls, so a new
# test that starts a job is left out of the fast loop without anyone remembering to mark it.
FOLDER_MARKS = {"browser": "browser", "sandbox": "namespaces", "cluster": "namespaces",
                "install": "jobs", "examples": "jobs"}
FIXTURE_MARKS = {"client": "jobs", "trained": "jobs", "trained_server": "jobs", "live_server": "browser",
                 "cli_env": "jobs", "postgres": "postgres", "detector": "jobs", "custom": "jobs",
                 "detector_client": "jobs"}
# A module that calls one of these starts a subprocess (a job, the CLI, a server) somewhere in it.
SOURCE_MARKS = {"subprocess": "jobs", "multiprocessing": "jobs", "os.fork": "jobs", "run_foreground": "jobs",
                "tick_until": "jobs", "wait_job": "jobs", "_detector(": "jobs", "trained_model": "jobs",
                "postgres": "postgres"}


def _suite_marks(item, sources: dict[Path, str]) -> set[str]:
    """The suite's marks an item earns by its folder, its fixtures and its module's calls."""
    path = Path(item.fspath)
    folders = path.relative_to(Path(__file__).parent).parts[:-1]
    marks = {FOLDER_MARKS[f] for f in folders if f in FOLDER_MARKS}
    marks |= {FIXTURE_MARKS[f] for f in item.fixturenames if f in FIXTURE_MARKS}
    if path not in sources:
        sources[path] = path.read_text()
    marks |= {mark for word, mark in SOURCE_MARKS.items() if word in sources[path]}
    if getattr(item, "callspec", None) and item.callspec.params.get("database_url") == "postgresql":
        marks.add("postgres")
    return marks


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects, so `-m gpu` sees the gpu mark added here
def pytest_collection_modifyitems(config, items):
    """`@pytest.mark.requires_cuda(n)`: a GPU test (selected by `-m gpu`), skipped without n devices;
    and the marks `make test-fast` leaves out (jobs, postgres, namespaces, browser)."""
    sources: dict[Path, str] = {}
    for item in items:
        for mark in _suite_marks(item, sources):
            item.add_marker(mark)
    marked = [(item, item.get_closest_marker("requires_cuda")) for item in items]
    marked = [(item, mark) for item, mark in marked if mark is not None]
    if not marked:
        return
    import torch  # only when a GPU test was collected: most runs never load torch here

    available = torch.cuda.device_count()
    for item, mark in marked:
        needed = int(mark.args[0]) if mark.args else 1
        item.add_marker(pytest.mark.gpu)
        if available < needed:
            item.add_marker(pytest.mark.skip(reason=f"needs {needed} CUDA devices"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI, a sandbox or namespace test skipped for a feature the machine offers fails
    (tests/expected_features.py): a skip there must mean the feature is truly absent."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or not expected_features.checked(Path(item.fspath), Path(__file__).parent):
        return
    reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    feature = expected_features.offered_but_skipped(reason)
    if feature is not None:
        report.outcome = "failed"
        report.longrepr = f"skipped ({reason}) although this machine offers {feature}: under CI that is a failure"
