"""Job statuses reach the pages from core/status.py alone (issue 24 item 4): every page carries
them as JSON for static/status.js, and no script or template spells a status name itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

from trainyard.core.status import ACTIVE_STATUSES, FINAL_STATUSES, Status

WEB = Path(__file__).parents[2] / "src" / "trainyard" / "web"
NAMES = "|".join(s.value for s in Status)
LITERAL = re.compile(rf"""["']({NAMES})["']""")


def test_every_page_carries_the_statuses_of_core_status(client):
    for url in ("/", "/datasets/new", "/system"):
        html = client.get(url).text
        found = re.search(r'<script type="application/json" id="status-vocabulary">(.*?)</script>', html)
        assert found, url
        doc = json.loads(found.group(1))
        assert doc["values"] == {s.name: s.value for s in Status}
        assert set(doc["final"]) == FINAL_STATUSES and doc["active"] == list(ACTIVE_STATUSES)


def test_no_script_or_template_spells_a_status():
    spelled = []
    for path in [*WEB.glob("static/*.js"), *WEB.glob("templates/*.html")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0] if path.suffix == ".js" else line
            # A weights pull's state (weights/pulls.py) is its own word list, not a job's status.
            if LITERAL.search(code) and ".state ===" not in code:
                spelled.append(f"{path.name}:{number}: {line.strip()}")
    assert spelled == []
