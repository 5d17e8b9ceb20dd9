"""Imports point down (docs/architecture.md, "Layers") and never go round in a circle: checked on the source.

The checker is tests/import_graph.py; tests/test_import_graph.py shows it failing on a
deliberate cycle and a deliberate upward import in a small package built for the purpose.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.import_graph import cycles, dependency_edges, imports_of, layer_of, modules, upward_imports

PACKAGE = Path(__file__).parent.parent / "src" / "trainyard"
EVERY_LAYER = {"core", "sandbox", "datasets", "networks", "weights", "artifact", "training", "inference", "jobs",
               "web", "cli", "settings", "cluster"}

# layer -> trainyard layers it must not import. Nothing below cli imports cli. cli may import web:
# `trainyard serve` is the one command that starts the web app (inside the command, not at import).
FORBIDDEN = {
    "core": EVERY_LAYER - {"core"},
    # the isolation boundary sits beside core: it imports only core
    "sandbox": EVERY_LAYER - {"core", "sandbox"},
    "settings": EVERY_LAYER - {"core", "settings"},
    "datasets": {"jobs", "web", "cli", "artifact", "training", "inference", "weights", "cluster"},
    "networks": {"jobs", "web", "cli", "training", "inference", "datasets", "artifact", "weights", "cluster"},
    # the weights store: published and own pretrained weights, below training and the jobs. It
    # may read what a checkpoint records about its input (artifact/recorded.py) when one is
    # imported as weights; artifact never imports weights, so the two cannot form a cycle.
    "weights": {"jobs", "web", "cli", "training", "inference", "datasets", "cluster"},
    "artifact": {"jobs", "web", "cli", "training", "inference", "weights", "cluster"},
    "training": {"jobs", "web", "cli", "inference", "cluster"},
    "inference": {"jobs", "web", "cli", "training", "cluster"},
    "jobs": {"web", "cli"},
    "web": {"cli"},
    "cli": set(),
    # the cluster launcher starts the training entry point as a process; it never imports it
    "cluster": EVERY_LAYER - {"core", "sandbox", "cluster"},
}
# third-party modules a layer must not import (the training process loads no web or database code)
FORBIDDEN_THIRD_PARTY = {
    "core": {"torch", "sqlalchemy", "fastapi", "numpy"},
    "sandbox": {"torch", "sqlalchemy", "fastapi", "numpy"},
    "datasets": {"sqlalchemy", "fastapi", "starlette"},
    "networks": {"sqlalchemy", "fastapi", "starlette"},
    "weights": {"sqlalchemy", "fastapi", "starlette", "uvicorn"},
    "artifact": {"sqlalchemy", "fastapi", "starlette", "uvicorn"},
    "training": {"sqlalchemy", "fastapi", "starlette", "uvicorn"},
    "cluster": {"torch", "sqlalchemy", "fastapi", "starlette"},
}
# ray is an optional extra (trainyard[cluster]): only the cluster layer imports it (lazily).
for _layer in FORBIDDEN:
    if _layer != "cluster":
        FORBIDDEN_THIRD_PARTY.setdefault(_layer, set()).add("ray")
# settings is read by every process, so besides the standard library it loads only config libraries
SETTINGS_THIRD_PARTY = {"pydantic", "pydantic_settings"}

MODULES = modules(PACKAGE)


def _params():
    for name, path in MODULES.items():
        if layer_of(name) in FORBIDDEN:
            yield pytest.param(name, path, id=str(path.relative_to(PACKAGE)))


def test_every_layer_is_checked():
    layers = {layer_of(name) for name in MODULES} - {None, "examples"}  # examples: stand-alone scripts
    assert layers == set(FORBIDDEN)


@pytest.mark.parametrize("name, path", list(_params()))
def test_imports_point_down(name, path):
    layer = layer_of(name)
    bad = []
    for target in imports_of(path, name, set(MODULES)):
        parts = target.split(".")
        if parts[0] == "trainyard" and len(parts) > 1 and parts[1] in FORBIDDEN[layer]:
            bad.append(target)
        if parts[0] in FORBIDDEN_THIRD_PARTY.get(layer, set()):
            bad.append(target)
        if layer == "settings" and parts[0] not in sys.stdlib_module_names | SETTINGS_THIRD_PARTY | {"trainyard"}:
            bad.append(target)
    assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}, against docs/architecture.md"


def test_no_upward_import_anywhere():
    assert upward_imports(PACKAGE, FORBIDDEN) == []


def test_no_import_cycles():
    found = cycles(dependency_edges(PACKAGE))
    assert not found, f"import cycles between trainyard modules: {found}"


def test_no_import_circle_counting_type_checking_and_function_imports():
    """Nor through an import under TYPE_CHECKING or inside a function: the runtime would not
    notice one, but it still ties modules that should depend one way (issue 32, point 3)."""
    known = set(MODULES)
    graph = {name: imports_of(path, name, known) for name, path in MODULES.items()}
    found = cycles(graph)
    assert not found, f"import circles (TYPE_CHECKING and function imports counted): {found}"


def test_every_module_says_what_it_is_for():
    missing = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not missing, f"modules without a docstring: {missing}"
