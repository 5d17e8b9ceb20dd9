"""Data that crosses a boundary is read typed: no dict reads of the artefact's preprocessing
outside artifact/, none of a job's spec outside the one place each boundary parses it, and none
of a dataset's info.json (``info``, ``parent.info``: datasets/info.DatasetInfo) but where it is written.

A dict read is ``x.get(...)`` or ``x["key"]`` where ``x`` is named for what it holds (``prep``,
``preprocess``, ``preprocessing``; ``spec``, ``model_spec``, ``self.spec``, ``read_spec(...)``)
or is itself the read of that key (``checkpoint["spec"]["id"]``, ``(job.get("spec") or
{}).get(...)``). The typed objects (artifact/preprocessing.Preprocessing, artifact/recorded.py,
each kind's spec class, core/stored.SpecView) have neither ``get`` nor ``[]``, so a hit is
always a dict. Checked on the syntax tree, so comments and docstrings do not count.
examples/ are stand-alone scripts shipped in archives (they may not import trainyard): exempt.
`python tests/test_typed_reads.py` prints the reads that remain.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "src" / "trainyard"
PREPROCESSING = re.compile(r"prep(rocess(ing)?)?$")
SPEC = re.compile(r"spec$")
INFO = re.compile(r"(^|_)info$")  # a dataset's info.json (or its job's summary): datasets/info.DatasetInfo
EXEMPT = ("examples",)
PREPROCESSING_HOME = ("artifact",)  # the package that owns the stored entry reads it
# Files whose ``info`` is another document, or the dataset's info.json being written: the build
# checks the dict it is about to write; an archive's info.json (origin, metrics) is not a dataset's.
NOT_DATASET_INFO = ("datasets/build.py", "datasets/detection/build.py", "inference/archive_import.py",
                    "inference/archive_readme.py", "jobs/runs/runner.py")  # runner: psutil's proc.info


def _name(node: ast.expr) -> str | None:
    """What ``node`` is called: ``spec``, ``self.spec`` -> spec, ``read_spec(...)`` -> read_spec."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _key_read(node: ast.expr) -> str | None:
    """The string key ``node`` reads (``x["k"]``, ``x.get("k")``, ``x.get("k") or {}``), if any."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        node = node.values[0]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
          and node.args and isinstance(node.args[0], ast.Constant)):
        key = node.args[0].value
    else:
        return None
    return key if isinstance(key, str) else None


def _receiver(node: ast.AST) -> ast.expr | None:
    """The dict that ``node`` reads from when it is ``x.get(...)`` or ``x["key"]``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return node.func.value
    return None


def _holds(receiver: ast.expr, pattern: re.Pattern[str]) -> bool:
    """Whether ``receiver`` is named for the data ``pattern`` names, or is the read of that key."""
    name, key = _name(receiver), _key_read(receiver)
    return any(text is not None and pattern.search(text) is not None for text in (name, key))


def dict_reads(root: Path = PACKAGE) -> dict[str, list[str]]:
    """``{"preprocessing": [...], "spec": [...], "dataset info": [...]}``: ``path:line`` of each dict read left."""
    found: dict[str, list[str]] = {"preprocessing": [], "spec": [], "dataset info": []}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in EXEMPT:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            receiver = _receiver(node)
            if receiver is None:
                continue
            where = f"{relative}:{node.lineno}"  # type: ignore[attr-defined]
            if _holds(receiver, PREPROCESSING) and relative.parts[0] not in PREPROCESSING_HOME:
                found["preprocessing"].append(where)
            if _holds(receiver, SPEC):
                found["spec"].append(where)
            if _holds(receiver, INFO) and relative.as_posix() not in NOT_DATASET_INFO:
                found["dataset info"].append(where)
    return {what: sorted(set(rows)) for what, rows in found.items()}


def test_the_check_finds_every_form_of_dict_read(tmp_path):
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "m.py").write_text(
        "def f(prep, spec, self, checkpoint, job, read_spec):\n"
        "    a = prep.get('mean')\n"
        "    b = prep['crop']\n"
        "    c = checkpoint['preprocess']['crop']\n"
        "    d = self.spec.get('id')\n"
        "    e = (job.get('spec') or {}).get('dataset_dir')\n"
        "    f = read_spec(job).get('cluster')\n"
        "    g = model_spec['lr']\n"
        "    # spec.get('in a comment') and prep['in a comment'] do not count\n"
        "    return spec.network, prep.crop, checkpoint['preprocess'], job['spec'], specs[0], inspect.get('x')\n")
    (tmp_path / "artifact").mkdir()
    (tmp_path / "artifact" / "p.py").write_text("def g(stored, prep):\n    return prep['width']\n")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "e.py").write_text("def h(spec):\n    return spec['id']\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "d.py").write_text(
        "def i(info, parent):\n    return info.get('channels'), parent.info['width']\n")
    assert dict_reads(tmp_path) == {"preprocessing": ["weights/m.py:2", "weights/m.py:3", "weights/m.py:4"],
                                    "spec": ["weights/m.py:5", "weights/m.py:6", "weights/m.py:7", "weights/m.py:8"],
                                    "dataset info": ["jobs/d.py:2"]}


def test_no_dict_reads_of_the_preprocessing_outside_the_artefact():
    rows = dict_reads()["preprocessing"]
    assert not rows, "the artefact's preprocessing read as a dict (use artifact/preprocessing.Preprocessing " \
                     "or artifact/recorded.RecordedInput):\n" + "\n".join(rows)


def test_no_dict_reads_of_a_job_spec():
    rows = dict_reads()["spec"]
    assert not rows, "a job spec read as a dict (read it through its kind's spec class, or a " \
                     "core/stored.SpecView where that class cannot be imported):\n" + "\n".join(rows)


def test_no_dict_reads_of_a_datasets_info():
    rows = dict_reads()["dataset info"]
    assert not rows, "a dataset's info.json or summary read as a dict (read it once as datasets/info.DatasetInfo):\n" \
                     + "\n".join(rows)


if __name__ == "__main__":
    for what, rows in dict_reads().items():
        print("\n".join(f"{what}: {row}" for row in rows))
        print(f"{len(rows)} dict reads of {what}", file=sys.stderr)
