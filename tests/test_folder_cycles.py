"""No circle between packages (folders) anywhere in src/, as tests/test_architecture.py has none
between files: a sub-package imports its siblings in one direction only (jobs: runs -> kinds ->
scheduling -> store). The file-level check cannot see a folder circle whose files form no circle."""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import cycles, dependency_edges, folder_edges
from tests.test_import_graph import make_package

SRC = Path(__file__).parent.parent / "src" / "trainyard"


def test_no_package_imports_another_that_imports_it_back():
    assert cycles(folder_edges(SRC)) == []


def test_the_jobs_packages_import_in_one_direction():
    graph = folder_edges(SRC)
    order = [f"trainyard.jobs.{name}" for name in ("runs", "kinds", "scheduling", "store")]
    for depth, package in enumerate(order):
        assert not graph.get(package, set()) & set(order[:depth]), f"{package} imports a package above it"


def test_a_deliberate_folder_cycle_fails_though_no_file_cycle_exists(tmp_path):
    package = make_package(tmp_path, {"low/a.py": "from pkg.high import b\n", "high/b.py": "",
                                      "high/c.py": "from pkg.low import d\n", "low/d.py": ""})
    assert cycles(dependency_edges(package)) == []  # a -> b and c -> d: no file circle
    assert cycles(folder_edges(package)) == [["pkg.high", "pkg.low"]]


def test_a_package_and_its_own_sub_package_are_not_a_circle(tmp_path):
    package = make_package(tmp_path, {"low/a.py": "from pkg.low.inner import b\n", "low/inner/__init__.py": "",
                                      "low/inner/b.py": "", "low/inner/c.py": "from pkg.low import d\n",
                                      "low/d.py": ""})
    assert cycles(folder_edges(package)) == []
