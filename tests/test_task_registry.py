"""The task registry ratchet (issue 43): outside the registries no code compares a task's name,
so adding a task is adding its parts, and every registry holds a part for every task."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainyard.core.registry import UnknownName
from trainyard.core.tasks import TASK_TRAITS, known_task, task_traits
from trainyard.core.vocabulary import DEFAULT_TASK, TASKS

SRC = Path(__file__).parent.parent / "src" / "trainyard"
# The modules that may spell a task's name beside what varies by it (docs/architecture.md, "Tasks").
REGISTRIES = {"core/vocabulary.py", "core/tasks.py"}
NAME = "|".join(TASKS)
# a task name compared with == or !=, either side, or a membership test in a literal collection
COMPARISON = re.compile(
    rf"""(?:[=!]=\s*["']({NAME})["'])|(?:["']({NAME})["']\s*[=!]=)|(?:\bin\s*[(\[{{][^)\]}}]*["']({NAME})["'])""")


def comparisons(text: str) -> list[str]:
    """The lines of ``text`` that compare with a task's name."""
    return [line.strip() for line in text.splitlines() if COMPARISON.search(line)]


def scanned() -> list[Path]:
    files = [*SRC.rglob("*.py"), *(SRC / "web" / "templates").rglob("*.html")]
    return [f for f in files if f.relative_to(SRC).as_posix() not in REGISTRIES]


def test_no_task_name_is_compared_outside_the_registries():
    found = [f"{path.relative_to(SRC)}: {line}" for path in scanned() for line in comparisons(path.read_text())]
    assert found == [], "ask core/tasks.py or a layer's task registry instead:\n" + "\n".join(found)


def test_the_ratchet_sees_each_way_of_comparing():
    assert comparisons('if spec.task == "detection":')
    assert comparisons("if 'classification' != task:")
    assert comparisons('{% if job.task != "detection" %}')
    assert comparisons('ok = task in ("classification", "detection")')
    assert not comparisons('TASK = "detection"  # registered, not compared')
    assert not comparisons('ROWS = {"detection": parse_detection_row}')


def test_every_task_is_registered_with_its_facts_and_parts():
    from trainyard.datasets.build import BUILDS
    from trainyard.inference.archive_readme import READMES
    from trainyard.inference.results import ROW_PARSERS
    from trainyard.inference.tasks import EVALUATE, MANY
    from trainyard.networks.check import CHECKS
    from trainyard.training.steps import TASKS as STEPS
    from trainyard.web.routers.inference_pages import PAGES
    from trainyard.web.routers.pages import DATASET_FRAGMENTS

    assert TASK_TRAITS.names() == list(TASKS) and DEFAULT_TASK in TASKS
    for registry in (CHECKS, BUILDS, STEPS, MANY, EVALUATE, ROW_PARSERS, READMES, PAGES, DATASET_FRAGMENTS):
        assert set(registry) == set(TASKS)
    assert [task_traits(t).best_metric for t in TASKS] == [STEPS[t].best for t in TASKS]


def test_an_unknown_or_missing_task_reads_as_the_default_or_is_refused_by_name():
    assert task_traits(None).name == DEFAULT_TASK
    assert known_task("nonsense") == DEFAULT_TASK and known_task(["a"]) == DEFAULT_TASK
    assert known_task("detection") == "detection"
    with pytest.raises(UnknownName, match="did you mean 'detection'"):
        task_traits("detektion")
