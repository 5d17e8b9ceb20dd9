"""Every function parameter in web/ and inference/ is annotated (except self and cls).

These two packages are where requests and user files come in; an annotated parameter is one mypy
checks at each call. `python tests/test_annotations.py` prints the functions that still lack one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "src" / "trainyard"
ANNOTATED_PACKAGES = ("web", "inference")


def _unannotated(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The names of `function`'s parameters that carry no annotation (self and cls excepted)."""
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [arg for arg in (args.vararg, args.kwarg) if arg is not None]
    return [arg.arg for arg in every if arg.annotation is None and arg.arg not in ("self", "cls")]


def unannotated_functions(root: Path = PACKAGE, packages: tuple[str, ...] = ANNOTATED_PACKAGES) -> list[str]:
    """`path:line name(params)` for each function (lambdas aside) with an unannotated parameter."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (missing := _unannotated(node)):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}({', '.join(missing)})")
    return found


def test_the_check_finds_an_unannotated_parameter(tmp_path):
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "m.py").write_text(
        "class A:\n"
        "    def ok(self, x: int, *args: int, **kw: str) -> None: ...\n"
        "    @classmethod\n"
        "    def ok2(cls) -> None: ...\n"
        "async def bad(a: int, b, *, c=1): ...\n"
        "def worse(*args, **kwargs): ...\n")
    assert unannotated_functions(tmp_path, ("web",)) == ["web/m.py:5 bad(b, c)", "web/m.py:6 worse(args, kwargs)"]


def test_every_parameter_in_web_and_inference_is_annotated():
    missing = unannotated_functions()
    assert not missing, f"{len(missing)} functions have an unannotated parameter:\n" + "\n".join(missing)


if __name__ == "__main__":
    rows = unannotated_functions()
    print("\n".join(rows))
    print(f"{len(rows)} functions with an unannotated parameter", file=sys.stderr)
