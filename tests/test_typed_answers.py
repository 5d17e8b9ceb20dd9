"""Answers are built as their models, not as dicts checked afterwards (issue 32, point 1).

Every route that declares a response model returns that model (its handler is annotated with it,
never ``-> dict``), and the functions annotated ``-> dict`` in src/ may only become fewer: those
that remain hand on what is a dict by nature (a JSON file's or a child process's raw content, a
template's context, environment variables, a request's fields before they are validated), and a
web route builds its model from them at the boundary. Checked on the syntax tree.
`python tests/test_typed_answers.py` prints the ``-> dict`` functions that remain.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "src" / "trainyard"
ROUTERS = PACKAGE / "web" / "routers"
ROUTE_METHODS = {"get", "post", "put", "patch", "delete"}
# Functions annotated `-> dict` (or dict[...], dict | None) in src/: 246 before the answers were
# built as their models, 181 after. Lower it when one goes; raise it only for a dict by nature,
# said here: round 5 added 17 (each task's build and inference step returns its job's JSON
# summary, split by the task registry; the YOLO model and loss return torchvision's loss dict;
# a recipe is settings before TrainSettings validates them; an export's manifest figures; the
# standalone archive scripts' member tables); the weights owners added 7 (an entry of the weights
# index, a JSON file, is a dict read and written whole; a user's usage is a table of quota names);
# multi-label and segmentation added 25, the same parts each task registers: its build's info
# summary, its inference and evaluation job JSON, its epoch's metrics, its archive's members;
# the executorch and coreml formats added 2, their archive scripts' member tables (each script
# stands alone, so shares no reader); splitting the weights import out of weights/store.py added 2,
# its Protocol restating the store's describe and finish (an entry's record, a JSON file); one
# use_archive script for every runtime and the shared build stream took 6 back.
MOST_DICT_RETURNS = 230


def _returns_dict(annotation: ast.expr | None) -> bool:
    """``dict``, ``dict[...]`` or either ``| None``."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _returns_dict(annotation.left) or _returns_dict(annotation.right)
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return isinstance(annotation, ast.Name) and annotation.id == "dict"


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def dict_returns() -> list[str]:
    """``file:line name`` of every function in src/ annotated to return a dict."""
    return [f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"
            for path in sorted(PACKAGE.rglob("*.py")) for node in _functions(path) if _returns_dict(node.returns)]


def _declares_a_model(decorator: ast.expr) -> bool:
    """``@router.get(..., response_model=...)`` (any router object, any HTTP method)."""
    return (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr in ROUTE_METHODS
            and any(k.arg == "response_model" for k in decorator.keywords))


def test_every_route_with_a_response_model_returns_it():
    routes = [(path, node) for path in sorted(ROUTERS.glob("*.py")) for node in _functions(path)
              if any(_declares_a_model(d) for d in node.decorator_list)]
    assert len(routes) > 40  # the check sees the routes (42 typed JSON routes and more)
    untyped = [f"{path.name}:{node.lineno} {node.name}" for path, node in routes
               if node.returns is None or _returns_dict(node.returns)]
    assert untyped == [], "build the response model itself, not a dict it is checked against"


def test_dict_returns_only_become_fewer():
    found = dict_returns()
    assert len(found) <= MOST_DICT_RETURNS, (
        f"{len(found)} functions return a dict ({MOST_DICT_RETURNS} allowed): return a typed model "
        "(core/document.py's Document for an answer); `python tests/test_typed_answers.py` lists them")


def test_the_check_sees_a_dict_return(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def a() -> dict: ...\ndef b() -> dict[str, int] | None: ...\ndef c() -> list[dict]: ...\n")
    assert [n.name for n in _functions(sample) if _returns_dict(n.returns)] == ["a", "b"]


if __name__ == "__main__":
    lines = dict_returns()
    print("\n".join(lines))
    print(f"{len(lines)} functions return a dict", file=sys.stderr)
