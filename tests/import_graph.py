"""The import checker behind tests/test_architecture.py: a package's imports as a graph, from the source.

Every import is resolved to an absolute module name (relative imports included), so ``from
..jobs import store`` counts like ``import trainyard.jobs.store.store``. Two views of the graph:

- layering (``imports_of``): every import anywhere in a module, functions and ``TYPE_CHECKING``
  blocks included, because an upward import is a wrong dependency wherever it is written.
- cycles (``dependency_edges``): the same imports minus those under ``if TYPE_CHECKING:``, which
  never run. Imports inside functions DO count: a deferred import is still a dependency, and
  hiding a cycle inside a function is exactly how cycles creep in (training/setup.py reached
  training/resume.py that way). A module that must defer a heavy import (``trainyard serve``
  loading the web app) still passes as long as the target does not import it back.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    """`root/pkg/a/b.py` -> "pkg.a.b" and `root/pkg/a/__init__.py` -> "pkg.a" (root holds the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package at `package_dir`, by dotted name."""
    root = package_dir.parent
    return {module_name(p, root): p for p in sorted(package_dir.rglob("*.py"))}


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module that `from <node.module> import ...` names, relative dots resolved."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.AST, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """The modules an import statement loads: `from a import b` is a.b when that is a module."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        source = _absolute(node, module, is_package)
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            yield sub if sub in known else source


def imports_of(path: Path, module: str, known: set[str]) -> set[str]:
    """Every module `path` imports anywhere (functions and TYPE_CHECKING included), absolute."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    return {t for node in ast.walk(tree) for t in _targets(node, module, is_package, known)}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST) -> Iterator[ast.stmt]:
    """Import statements anywhere in `tree` except the body of `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def dependency_edges(package_dir: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports at run time (see the module docstring)."""
    found = modules(package_dir)
    known = set(found)
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        targets = {t for node in _runtime_imports(tree) for t in _targets(node, name, is_package, known)}
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: each strongly connected group of two or more modules, sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer_of(module: str) -> str | None:
    """`pkg.jobs.store` -> "jobs"; `pkg.settings` -> "settings"; the package itself -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def upward_imports(package_dir: Path, forbidden: dict[str, set[str]]) -> list[str]:
    """'module imports target' for every import of a layer that `forbidden[layer]` names."""
    found = modules(package_dir)
    known = set(found)
    top = package_dir.name
    bad = []
    for name, path in found.items():
        banned = forbidden.get(layer_of(name) or "", set())
        for target in sorted(imports_of(path, name, known)):
            parts = target.split(".")
            if parts[0] == top and len(parts) > 1 and parts[1] in banned:
                bad.append(f"{name} imports {target}")
    return bad


def folder_of(module: str, path: Path) -> str:
    """The package (folder) a module belongs to: itself for an ``__init__.py``, else its parent."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def folder_edges(package_dir: Path) -> dict[str, set[str]]:
    """package -> the packages its modules import at run time (``dependency_edges``, folded by
    folder). A package and its own sub-packages are not linked: a package's top files assemble
    its sub-packages and the sub-packages use the shared files beside them (jobs/context.py,
    datasets/spec.py); the circles that matter are between siblings and cousins (jobs/runs and
    jobs/kinds importing each other)."""
    found = modules(package_dir)
    graph: dict[str, set[str]] = {}
    for module, targets in dependency_edges(package_dir).items():
        source = folder_of(module, found[module])
        for target in targets:
            folder = folder_of(target, found[target])
            if folder != source and not folder.startswith(source + ".") and not source.startswith(folder + "."):
                graph.setdefault(source, set()).add(folder)
    return graph
