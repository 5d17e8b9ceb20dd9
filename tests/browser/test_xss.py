"""Stored XSS, in a real browser: names from the user's folders stay text, and no inline script runs.

A class folder named ``x" onload="window.pwned=1`` once closed the explorer's ``alt="..."``
attribute and ran its handler when the thumbnail loaded.
"""

from __future__ import annotations

import time

import httpx
import pytest

from tests.conftest import make_image_folder
from tests.live_server import BROWSER_HEADERS

pytestmark = pytest.mark.browser
HOSTILE = 'x" onload="window.pwned=1'


@pytest.fixture
def strict_page(browser):
    """A page that keeps the Content-Security-Policy (the shared ``page`` fixture bypasses it)."""
    context = browser.new_context(extra_http_headers=BROWSER_HEADERS)
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture(scope="module")
def hostile_dataset(live_server) -> str:
    folder = make_image_folder(live_server.settings.data_roots[0] / "hostile", {HOSTILE: 6, "plain": 6})
    job = httpx.post(f"{live_server.url}/api/datasets", timeout=30, headers=BROWSER_HEADERS,
                     json={"name": "hostile", "train_folder": str(folder), "width": 16, "height": 16}).json()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = httpx.get(f"{live_server.url}/api/jobs/{job['id']}", timeout=30,
                           headers=BROWSER_HEADERS).json()["status"]
        if status not in ("queued", "waiting", "running"):
            break
        time.sleep(0.5)
    assert status == "done", status
    return job["id"]


def test_a_hostile_class_name_stays_text_in_the_explorer(live_server, strict_page, hostile_dataset):
    page = strict_page
    page.goto(f"{live_server.url}/datasets/{hostile_dataset}")
    page.select_option("#explore-class", label=HOSTILE)
    page.locator("#explore-grid figcaption", has_text="onload").first.wait_for()
    page.wait_for_timeout(1000)  # the thumbnails load: an injected onload would have run by now
    assert page.evaluate("() => window.pwned") is None
    image = page.locator("#explore-grid img").first
    assert image.get_attribute("alt") == HOSTILE
    assert image.get_attribute("onload") is None


def test_the_pages_policy_blocks_inline_handlers_even_if_markup_gets_in(live_server, strict_page):
    page = strict_page
    response = page.goto(f"{live_server.url}/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    # Markup slipped into the page by any other path: its handler must not run.
    page.evaluate("""() => { const d = document.createElement('div');
        d.innerHTML = '<img src="/static/missing.png" onerror="window.pwned=2">';
        document.body.append(d); }""")
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.pwned") is None
