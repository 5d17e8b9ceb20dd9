"""Every timm model as a network: ``timm:<model>`` for any name ``timm.list_models()`` gives.

Not copied into the registry (timm has well over a thousand): the registry asks `resolve` for
names with the ``timm:`` prefix, and the answer is built from timm's own metadata (its default
pretrained config gives the input size). Models are always built with ``pretrained=False``;
weights come from the store (trainyard.weights). `search` serves the form's searchable list.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import tempfile
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.core import environment
from trainyard.core.errors import NotFound
from trainyard.core.vocabulary import Task

from .info import TIMM_PREFIX, NetworkInfo, UnknownNetwork

if TYPE_CHECKING:
    from torch import nn

TASK: Task = "classification"  # what a family's networks train on (table.network_task)
DEFAULT_BATCH = 32
MIN_IMAGE_SIZE = 32


class UnknownTimmModel(UnknownNetwork):
    """A ``timm:`` name timm does not have; the message suggests close ones (not all of them)."""

    def __init__(self, model: str, close: list[str]):
        self.name, self.valid = TIMM_PREFIX + model, [TIMM_PREFIX + c for c in close]
        hint = f"; did you mean {', '.join(self.valid)}?" if close else "; see GET /api/networks/search"
        NotFound.__init__(self, f"unknown timm model {model!r}{hint}")


@cache
def model_names() -> tuple[str, ...]:
    """timm's model names, sorted. Importing timm (and torch) takes seconds, so the list is kept in
    a file per timm version (`names_file`): a mistyped ``timm:`` name is refused, and the form's
    search answers, without importing either once the file is written."""
    cached = names_file()
    try:
        if cached is not None:
            return tuple(cached.read_text().split())
    except OSError:  # not written yet (or unreadable): ask timm, and keep its answer
        pass
    import timm

    names = tuple(timm.list_models())
    if cached is not None:
        _write(cached, names)
    return names


def names_file() -> Path | None:
    """Where timm's model names are kept: the user's cache folder, one file per timm version
    (a new timm has new models); None without timm."""
    version = _timm_version()
    if version is None:
        return None
    base = environment.cache_home()
    return base / "trainyard" / f"timm-{version}-models.txt"


def _timm_version() -> str | None:
    """timm's version, read from its version.py: found without importing timm, and sooner than
    importlib.metadata (a tenth of a second of imports) would give it."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.origin:
        return None
    try:
        found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", (Path(spec.origin).parent / "version.py").read_text())
    except OSError:
        found = None
    return found.group(1) if found else None


def _write(path: Path, names: tuple[str, ...]) -> None:
    """Write the names whole or not at all (a reader never sees half a list); a folder that cannot
    be written only means asking timm again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
            out.write("\n".join(names) + "\n")
        os.replace(out.name, path)
    except OSError:
        pass


def search(query: str = "", limit: int = 50) -> list[str]:
    """``timm:`` names containing every word of ``query``, shortest (most basic) first."""
    words = query.lower().removeprefix(TIMM_PREFIX).split()
    found = [n for n in model_names() if all(w in n for w in words)]
    return [TIMM_PREFIX + n for n in sorted(found, key=lambda n: (len(n), n))[:limit]]


def check_name(name: str) -> str:
    """The model of ``timm:<model>``, refused (UnknownTimmModel) if timm has none of that name:
    from the names alone, so a mistyped name costs no more than a mistyped standard one."""
    model = name.removeprefix(TIMM_PREFIX)
    if model not in _name_set():
        raise UnknownTimmModel(model, difflib.get_close_matches(model, model_names(), n=3, cutoff=0.6))
    return model


@cache
def _name_set() -> frozenset[str]:
    return frozenset(model_names())


def _config(model: str):
    from timm.models import get_pretrained_cfg

    return get_pretrained_cfg(model)


@cache
def resolve(name: str):
    """(NetworkInfo, builder, source function) for ``timm:<model>``; UnknownNetwork otherwise."""
    model = check_name(name)
    cfg = _config(model)
    size = int(cfg.input_size[-1]) if cfg else 224
    fixed = bool(cfg and cfg.fixed_input_size)
    info = NetworkInfo(
        name=name, description=f"{model} from timm (pytorch-image-models)"
        + (f", {size}x{size} input" if fixed else ""),
        image_size=size, batch_size=DEFAULT_BATCH, source_module="timm",
        min_image_size=size if fixed else MIN_IMAGE_SIZE)
    return info, partial(build, model), partial(source, model)


def build(model: str, num_classes: int, in_channels: int, image_size: int) -> nn.Module:
    """A randomly initialised timm model for the dataset's classes, channels and size."""
    import timm

    try:  # transformers take the image size; convolutional networks do not need it
        return timm.create_model(model, pretrained=False, num_classes=num_classes,
                                 in_chans=in_channels, img_size=image_size)
    except TypeError:
        return timm.create_model(model, pretrained=False, num_classes=num_classes, in_chans=in_channels)


_SOURCE = '''"""{model} from timm (pytorch-image-models), random initialisation, as a custom network.

Edit freely: trainyard calls build(num_classes, in_channels, image_size) and trains the module.
"""

import timm


def build(num_classes, in_channels, image_size):
    try:  # transformers take the image size; convolutional networks do not need it
        return timm.create_model("{model}", pretrained=False, num_classes=num_classes,
                                 in_chans=in_channels, img_size=image_size)
    except TypeError:
        return timm.create_model("{model}", pretrained=False, num_classes=num_classes,
                                 in_chans=in_channels)
'''


def source(model: str) -> str:
    return _SOURCE.format(model=model)
