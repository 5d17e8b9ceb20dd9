"""A ratchet on ``type: ignore`` in src/: at most MAX_IGNORES, each naming its error codes and why.

An ignore silences mypy for a whole line; one with no code hides any error that comes later, and
one with no reason cannot be judged. Code is typed properly (a cast with a reason, a Protocol, an
isinstance guard, a typed wrapper) unless a library's stubs leave no clean way, and then the ignore
says which error and why: ``x = y  # type: ignore[code]  # why``. Lower MAX_IGNORES as they go;
`python tests/test_type_ignores.py` lists them.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"
MAX_IGNORES = 3
IGNORE = re.compile(r"type:\s*ignore")
EXPLAINED = re.compile(r"type:\s*ignore\[[a-z-]+(,\s*[a-z-]+)*\]\s+#\s*\S.*")


def type_ignores(root: Path = SRC) -> list[tuple[str, str]]:
    """(``path:line``, the comment) for each comment under ``root`` holding a ``type: ignore``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
        for token in tokens:
            if token.type == tokenize.COMMENT and IGNORE.search(token.string):
                found.append((f"{path.relative_to(root)}:{token.start[0]}", token.string))
    return found


def unexplained(ignores: list[tuple[str, str]]) -> list[str]:
    """The ignores among ``ignores`` without an error code or without a reason after it."""
    return [f"{where} {comment}" for where, comment in ignores if not EXPLAINED.search(comment)]


def test_the_check_finds_ignores_without_a_code_or_a_reason(tmp_path):
    (tmp_path / "m.py").write_text(
        "a = 1  # type: ignore\n"
        "b = 2  # type: ignore[assignment]\n"
        "c = 3  # type: ignore[method-assign, assignment]  # a patch, on purpose\n"
        "d = 'type: ignore'  # a string, not a comment\n")
    ignores = type_ignores(tmp_path)
    assert [where for where, _ in ignores] == ["m.py:1", "m.py:2", "m.py:3"]
    assert unexplained(ignores) == ["m.py:1 # type: ignore", "m.py:2 # type: ignore[assignment]"]


def test_src_has_no_more_type_ignores_than_the_ratchet_allows():
    ignores = type_ignores()
    assert len(ignores) <= MAX_IGNORES, (
        f"{len(ignores)} type: ignore in src/ (at most {MAX_IGNORES}): type the code instead\n"
        + "\n".join(f"{where} {comment}" for where, comment in ignores))


def test_each_type_ignore_names_its_error_code_and_why():
    missing = unexplained(type_ignores())
    assert not missing, "each needs ``# type: ignore[code]  # reason``:\n" + "\n".join(missing)


if __name__ == "__main__":
    rows = type_ignores()
    print("\n".join(f"{where} {comment}" for where, comment in rows))
    print(f"{len(rows)} type: ignore in src/ ({len(unexplained(rows))} without a code and a reason)",
          file=sys.stderr)
