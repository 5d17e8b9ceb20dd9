"""The architecture checker fails on what it must catch: a cycle, an upward import, relative ones too."""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import cycles, dependency_edges, upward_imports

FORBIDDEN = {"low": {"high"}, "high": set()}


def make_package(root: Path, files: dict[str, str]) -> Path:
    """A package `pkg` under `root` with the given module texts (each gets a docstring)."""
    package = root / "pkg"
    for relative, text in {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "", **files}.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""{relative}."""\n{text}')
    return package


def test_a_clean_package_passes(tmp_path):
    package = make_package(tmp_path, {"low/a.py": "import os\n", "high/b.py": "from pkg.low import a\n"})
    assert cycles(dependency_edges(package)) == [] and upward_imports(package, FORBIDDEN) == []


def test_a_deliberate_cycle_fails(tmp_path):
    package = make_package(tmp_path, {"low/a.py": "from pkg.low import b\n", "low/b.py": "from . import a\n"})
    assert cycles(dependency_edges(package)) == [["pkg.low.a", "pkg.low.b"]]


def test_a_longer_cycle_through_relative_imports_fails(tmp_path):
    package = make_package(tmp_path, {"low/a.py": "from .b import x\n", "low/b.py": "from ..high.c import y\nx = 1\n",
                                      "high/c.py": "import pkg.low.a\ny = 2\n"})
    assert cycles(dependency_edges(package)) == [["pkg.high.c", "pkg.low.a", "pkg.low.b"]]


def test_an_import_inside_a_function_still_makes_a_cycle(tmp_path):
    package = make_package(tmp_path, {"low/a.py": "from pkg.low import b\n",
                                      "low/b.py": "def f():\n    from pkg.low import a\n    return a\n"})
    assert cycles(dependency_edges(package)) == [["pkg.low.a", "pkg.low.b"]]


def test_an_import_for_type_checking_only_makes_no_cycle(tmp_path):
    package = make_package(tmp_path, {
        "low/a.py": "from pkg.low import b\n",
        "low/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.low import a\n",
    })
    assert cycles(dependency_edges(package)) == []


def test_a_deliberate_upward_import_fails_even_inside_a_function(tmp_path):
    package = make_package(tmp_path, {"high/b.py": "", "low/a.py": "def f():\n    from ..high import b\n"})
    assert upward_imports(package, FORBIDDEN) == ["pkg.low.a imports pkg.high.b"]
