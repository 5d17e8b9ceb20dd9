"""A live trainyard server (uvicorn in a thread) and Debian's chromium driven by Playwright.

Never ``playwright install``: the tests use the system's /usr/bin/chromium and are skipped, with
the reason, where it is missing.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.live_server import BROWSER_HEADERS, BROWSER_TOKEN, serving
from trainyard.jobs.scheduling.resources import Pools
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
    settings = Settings(home=tmp / "home", data_roots=[tmp / "data"], auth_token=BROWSER_TOKEN)
    folder = make_images_with_bad_files(settings.data_roots[0] / "images")
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    with serving(app) as url:
        yield SimpleNamespace(url=url, settings=settings, folder=folder, token=BROWSER_TOKEN, app=app)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def trained_server(trained):
    """The real app (scheduler on) over the session's shared trained model (tests/trained_model.py:
    one 28x28 RGB dataset of 3 colours, one LeNet), on a free port."""
    from trainyard.web.app import create_app

    settings = trained.settings.model_copy(update={"auth_token": BROWSER_TOKEN})
    app = create_app(settings, pools=Pools(dataset_slots=2, cpu_slots=1, gpus=[]))
    with serving(app) as url:
        yield SimpleNamespace(url=url, trained=trained, app=app, token=BROWSER_TOKEN)


def offline(context, blocked: list[str]) -> None:
    """Let the page reach the local server only, as on a machine without internet."""
    def route(route):
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "http://localhost:")):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    context.route("**/*", route)


def open_page(browser, viewport: dict | None = None):
    """(context, page, JavaScript errors, blocked requests) for a fresh offline page."""
    # Playwright's wait_for_function evaluates strings, which the pages' Content-Security-Policy
    # forbids; tests/browser/test_xss.py checks the policy itself in a context that keeps it.
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900}, bypass_csp=True,
                                  extra_http_headers=BROWSER_HEADERS)
    blocked: list[str] = []
    offline(context, blocked)
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.blocked = blocked
    return context, page, errors


@pytest.fixture
def new_page(browser):
    """``new_page()``: (context, page, JavaScript errors) for more pages in one test."""
    return lambda viewport=None: open_page(browser, viewport)


@pytest.fixture
def page(browser):
    """A fresh page that reaches only the local server; JavaScript errors on it fail the test."""
    context, page, errors = open_page(browser)
    yield page
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


@pytest.fixture
def phone(browser):
    """Like ``page``, at a phone's 390x844 viewport."""
    context, page, errors = open_page(browser, {"width": 390, "height": 844})
    yield page
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
