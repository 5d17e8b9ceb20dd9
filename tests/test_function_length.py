"""No function in src/ is over 60 lines, its signature and decorators included (issue 47).

A function that long holds several steps a reader has to keep apart; each step reads better as a
function of its own with a name that says what it does. The one exception is listed below with
its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).parent.parent / "src" / "trainyard"
MOST_LINES = 60
# path relative to src/trainyard :: function name -> why it is longer
EXCEPTIONS = {
    # A typer command's parameters are its options, one per line with its --help: 52 of them.
    # The body does no work of its own beyond assembling the request (about 35 lines).
    "cli/train.py::train": "its parameter list: the command's 52 options",
}


def long_functions(source: str) -> dict[str, int]:
    """Each function (or method) over MOST_LINES in ``source``: its name -> its lines, from its
    first decorator to its last line."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = (node.end_lineno or node.lineno) - start + 1
            if lines > MOST_LINES:
                found[node.name] = lines
    return found


def test_the_checker_sees_a_long_function_and_counts_its_decorator():
    body = "\n".join(f"    x{i} = {i}" for i in range(MOST_LINES - 2))
    assert long_functions(f"def short():\n{body}\n") == {}  # 59 lines: def + 58
    assert long_functions(f"@decorated\ndef long():\n{body}\n    return 1\n") == {"long": MOST_LINES + 1}


def test_no_function_is_over_60_lines():
    found = {f"{path.relative_to(SOURCE).as_posix()}::{name}": lines
             for path in sorted(SOURCE.rglob("*.py"))
             for name, lines in long_functions(path.read_text()).items()}
    over = {key: lines for key, lines in found.items() if key not in EXCEPTIONS}
    assert not over, f"functions over {MOST_LINES} lines (split them into named steps): {over}"
    assert set(EXCEPTIONS) <= set(found), f"exceptions no longer needed, remove them: {set(EXCEPTIONS) - set(found)}"
