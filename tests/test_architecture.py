"""Imports point down (DESIGN section 2): checked on the source, so a stray import fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "src" / "trainyard"

# package -> trainyard packages it must not import
FORBIDDEN = {
    "core": {"jobs", "web", "cli", "datasets", "networks", "training", "inference", "settings"},
    "datasets": {"jobs", "web", "cli", "training", "inference"},
    "networks": {"jobs", "web", "cli", "training", "inference", "datasets"},
    "weights": {"jobs", "web", "cli", "training", "inference", "datasets"},
    "training": {"jobs", "web", "cli", "inference"},
    "inference": {"jobs", "web", "cli"},
    "jobs": {"web", "cli"},
    "web": {"cli"},
}
# third-party modules a package must not import (the training process loads no web or database code)
FORBIDDEN_THIRD_PARTY = {
    "core": {"torch", "sqlalchemy", "fastapi", "numpy"},
    "datasets": {"sqlalchemy", "fastapi", "starlette"},
    "networks": {"sqlalchemy", "fastapi", "starlette"},
    "weights": {"sqlalchemy", "fastapi", "starlette"},
    "training": {"sqlalchemy", "fastapi", "starlette", "uvicorn"},
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def package_files():
    for package in FORBIDDEN:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            yield pytest.param(package, path, id=str(path.relative_to(PACKAGE)))


@pytest.mark.parametrize("package, path", list(package_files()))
def test_imports_point_down(package, path):
    bad = []
    for name in imported_modules(path):
        parts = name.split(".")
        if parts[0] == "trainyard" and len(parts) > 1 and parts[1] in FORBIDDEN[package]:
            bad.append(name)
        if parts[0] in FORBIDDEN_THIRD_PARTY.get(package, set()):
            bad.append(name)
    assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}, against DESIGN section 2"


def test_every_module_says_what_it_is_for():
    missing = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not missing, f"modules without a docstring: {missing}"
