"""The catalogue kept in a file (weights/catalogue_cache.py): built once, then read without torch."""

from __future__ import annotations

import math

from trainyard.weights.catalogue import WeightsEntry
from trainyard.weights.catalogue_cache import cache_file, cached_entries


def test_entries_are_built_once_then_read_back_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    entries = (WeightsEntry("resnet18.imagenet1k_v1", "resnet18", "torchvision", "r.pth", url="u", sha256="ab",
                            accuracy={"ImageNet-1K acc@1": 69.758}, aliases=("resnet18.imagenet",)),
               WeightsEntry("vgg16.imagenet1k_features", "vgg16", "torchvision", "v.pth",
                            accuracy={"ImageNet-1K acc@1": math.nan}, input_size=(3, 32, 32)))
    built = []

    def build():
        built.append(1)
        return entries

    assert cached_entries("torchvision", build, WeightsEntry) == entries
    assert cache_file("torchvision").is_file() and cache_file("torchvision").parent.parent == tmp_path

    def never():
        raise AssertionError("built again")

    again = cached_entries("torchvision", never, WeightsEntry)
    assert built == [1] and again[0] == entries[0]
    assert again[1].accuracy == {} and again[1].input_size == (3, 32, 32)  # NaN is no figure
    assert cache_file("timm") != cache_file("torchvision")
