"""Environment reads stay in two modules (issue 47): a ratchet on the source.

``settings.py`` declares and reads trainyard's settings (the TRAINYARD_* variables a person sets),
typed and documented, and `trainyard system` lists them. ``core/environment.py`` reads what is
not a setting but a protocol: what torch.distributed's launchers, CUDA, Ray, Hugging Face and
the XDG layout say through the environment, the variables a trainyard process hands its child,
and the sandbox's settings in the sandbox's own processes, which do not load pydantic (its
docstring says why). Everywhere else the environment is only written (a child's ``env=``) or
handed on whole, never read for a value.

What counts as a read: ``os.environ.get``, ``os.environ[...]`` read, ``os.getenv``, ``... in
os.environ`` (and ``not in``), and ``os.environ.pop`` whose value is used. Not counted: the
environment handed on whole, as a mapping, to code that builds a child's environment from it
(core/environment.child_environment, sandbox/job.training_policy's ``env``, whose
TRAINYARD_JOB_WORK_MB, TRAINYARD_SANDBOX_MEMORY_MB and the launcher's TRAINYARD_RANK_PEERS are
read from the environment the child will have, declared in settings.py all the same;
core/interfaces.bind_towards_rendezvous; core/rank_threads' ``environ``, which its tests replace).
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).parent.parent / "src" / "trainyard"
ALLOWED = {"settings.py", "core/environment.py"}
MOST_READS = 0  # the reads left outside ALLOWED; lower it, never raise it


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def environment_reads(source: str) -> list[int]:
    """The line of each environment read in ``source``."""
    tree = ast.parse(source)
    used_pops = set()  # an os.environ.pop(...) that is a statement of its own only removes
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            used_pops.add(id(node.value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if _is_environ(func.value) and (func.attr == "get" or (func.attr == "pop" and id(node) not in used_pops)):
                found.append(node.lineno)
            elif func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os":
                found.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            found.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators) \
                and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            found.append(node.lineno)
    return sorted(found)


def test_the_counter_sees_each_kind_of_read_and_no_write():
    reads = "\n".join(["import os", "a = os.environ.get('A')", "b = os.environ['B']", "c = os.getenv('C')",
                       "d = 'D' in os.environ", "e = os.environ.pop('E', None)"])
    writes = "\n".join(["import os", "os.environ['A'] = '1'", "os.environ.pop('B', None)",
                        "os.environ.setdefault('C', '2')", "env = dict(os.environ)", "del os.environ['D']"])
    assert environment_reads(reads) == [2, 3, 4, 5, 6]
    assert environment_reads(writes) == []


def test_environment_reads_stay_in_settings_and_the_environment_module():
    found = {f"{path.relative_to(SOURCE).as_posix()}:{line}"
             for path in sorted(SOURCE.rglob("*.py")) if path.relative_to(SOURCE).as_posix() not in ALLOWED
             for line in environment_reads(path.read_text())}
    assert len(found) <= MOST_READS, (f"{len(found)} environment reads outside {sorted(ALLOWED)} (at most "
                                      f"{MOST_READS}): a setting belongs in settings.py, a protocol variable "
                                      f"in core/environment.py: {sorted(found)}")
