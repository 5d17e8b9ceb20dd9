"""Registry: names in registration order, a decorator, and a "did you mean" NotFound for a typo."""

from __future__ import annotations

import pytest

from trainyard.core.errors import NotFound
from trainyard.core.registry import Registry, UnknownName


def make() -> Registry:
    colours: Registry = Registry("colour")
    colours.register("red", 1, info={"hex": "#f00"})

    @colours.register("green", info={"hex": "#0f0"})
    def green():
        return 2

    colours.register("blue", 3)
    return colours


def test_names_values_and_infos_keep_registration_order():
    colours = make()
    assert colours.names() == list(colours) == ["red", "green", "blue"]
    assert colours.list()[0] == 1 and colours.list()[1]() == 2 and len(colours) == 3
    assert colours.infos() == [{"hex": "#f00"}, {"hex": "#0f0"}, None]
    assert colours.info("green") == {"hex": "#0f0"} and "blue" in colours and "pink" not in colours


def test_a_typo_is_a_not_found_that_suggests_the_closest_name_and_lists_all():
    with pytest.raises(NotFound) as err:
        make().get("gren")
    assert str(err.value) == "unknown colour 'gren'; did you mean 'green'? valid names: red, green, blue"
    assert err.value.http_status == 404 and isinstance(err.value, ValueError)


def test_no_suggestion_when_nothing_is_close_and_the_registry_picks_its_error_and_words():
    class UnknownShape(UnknownName):
        pass

    shapes: Registry = Registry("shape", error=UnknownShape, plural="shapes")
    shapes.register("circle", 1)
    with pytest.raises(UnknownShape, match=r"^unknown shape 'zzz'; valid shapes: circle$"):
        shapes.info("zzz")
    with pytest.raises(UnknownShape):
        shapes.get(["not", "hashable"])  # type: ignore[arg-type]


def test_a_name_registers_once():
    with pytest.raises(ValueError, match="colour 'red' is already registered"):
        make().register("red", 9)


def test_replace_swaps_the_value_and_keeps_the_place():
    colours = make()
    colours.register("red", 9, replace=True)
    assert colours.names() == ["red", "green", "blue"] and colours.get("red") == 9


@pytest.mark.parametrize("module, getter, typo, suggestion", [
    ("trainyard.training.solvers", "get_solver", "adamm", "adam"),
    ("trainyard.training.lr_policies", "get_lr_policy", "cosin", "cosine"),
    ("trainyard.datasets.resize_plans", "plan_resize", "half-crop", "half_crop"),
    ("trainyard.jobs.kinds.registry", "get_kind", "modle", "model"),
])
def test_every_registry_answers_a_typo_the_same_way(module, getter, typo, suggestion):
    import importlib

    function = getattr(importlib.import_module(module), getter)
    args = ((10, 10), 5, 5, typo) if getter == "plan_resize" else (typo,)
    with pytest.raises(NotFound, match=f"did you mean '{suggestion}'"):
        function(*args)
