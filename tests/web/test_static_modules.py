"""The pages' scripts are ES modules with no build step (issue 24 item 6): each page loads its
own scripts as `<script type="module">`, a script reaches another only by import, every import
names something the other module exports, and the live job pages share one controller."""

from __future__ import annotations

import re
from pathlib import Path

WEB = Path(__file__).parents[2] / "src" / "trainyard" / "web"
STATIC = WEB / "static"
JOB_PAGES = ("dataset_show.html", "model_show.html", "many_show.html", "evaluate_show.html")


def exports(path: Path) -> set[str]:
    return set(re.findall(r"^export (?:const|class|function) (\w+)", path.read_text(), re.M))


def test_own_scripts_are_modules_and_vendored_ones_classic():
    for template in WEB.glob("templates/*.html"):
        for tag in re.findall(r"<script[^>]*\ssrc=[^>]*>", template.read_text()):
            assert ('type="module"' in tag) != ("/static/vendor/" in tag), f"{template.name}: {tag}"


def test_no_script_publishes_a_global_and_every_import_is_exported():
    for path in STATIC.glob("*.js"):
        text = path.read_text()
        assert not re.search(r"window\.\w+\s*=", text), path.name
        for names, target in re.findall(r'^import \{ ([^}]+) \} from "\./([\w.]+)";', text, re.M):
            assert (STATIC / target).exists(), (path.name, target)
            missing = {n.strip() for n in names.split(",")} - exports(STATIC / target)
            assert not missing, (path.name, target, missing)


def test_a_script_imports_every_other_modules_export_it_uses():
    """A module sees another's names only by import: a bare ``ty.api`` without one is a
    ReferenceError on the page (the System page's script once had none)."""
    exported = {name: path.name for path in STATIC.glob("*.js") for name in exports(path)}
    for path in STATIC.glob("*.js"):
        text = path.read_text()
        imported = {n.strip() for names in re.findall(r"^import \{ ([^}]+) \}", text, re.M) for n in names.split(",")}
        code = re.sub(r"//.*", "", text)
        own = set(re.findall(r"\b(?:const|let|var|function|class) (\w+)", code))  # a local of the same name
        used = {name for name, home in exported.items()
                if home != path.name and name not in own and re.search(rf"(?<![\w.$-]){name}\s*[.(]", code)}
        assert used <= imported, (path.name, sorted(used - imported))


def test_the_job_pages_share_one_controller_and_one_header():
    controllers = [p.name for p in STATIC.glob("*.js") if "new EventSource(" in p.read_text()]
    assert controllers == ["job_page.js"]
    for name in JOB_PAGES:
        text = (WEB / "templates" / name).read_text()
        assert "job_header(" in text and 'class="job-header"' not in text, name
        entry = re.findall(r'<script type="module" src="/static/(\w+\.js)"', text)[-1]
        assert "JobPage" in (STATIC / entry).read_text(), (name, entry)
