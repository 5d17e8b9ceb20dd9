"""A live trainyard server (uvicorn in a thread) and Debian's chromium driven by Playwright.

Never ``playwright install``: the tests use the system's /usr/bin/chromium and are skipped, with
the reason, where it is missing.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.live_server import serving
from trainyard.jobs.resources import Pools
from trainyard.settings import Settings

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-dev-shm-usage"]


def pytest_collection_modifyitems(config, items):
    skip = None
    if not CHROMIUM.exists():
        skip = pytest.mark.skip(reason=f"{CHROMIUM} is missing: apt-get install chromium to run the browser tests")
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            skip = pytest.mark.skip(reason="the playwright Python package is not installed (pip install -e '.[dev]')")
    for item in items:
        if "browser" in item.keywords and skip is not None:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory, make_images_with_bad_files):
    """The real app with its scheduler on a free 127.0.0.1 port, over a temporary home."""
    from trainyard.web.app import create_app

    tmp = tmp_path_factory.mktemp("browser")
    settings = Settings(home=tmp / "home", data_roots=[tmp / "data"])
    folder = make_images_with_bad_files(settings.data_roots[0] / "images")
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    with serving(app) as url:
        yield SimpleNamespace(url=url, settings=settings, folder=folder)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser):
    """A fresh page; JavaScript errors on it fail the test."""
    # Playwright's wait_for_function evaluates strings, which the pages' Content-Security-Policy
    # forbids; tests/browser/test_xss.py checks the policy itself in a context that keeps it.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
