"""Routers added by feature modules, so create_app needs no edit per feature."""

from __future__ import annotations

import importlib

# Modules that define ``router``; each is optional until its feature lands.
FEATURE_MODULES = [
    "trainyard.web.routers.models",
    "trainyard.web.routers.networks",
    "trainyard.web.routers.inference",
]


def all_routers() -> list:
    routers = []
    for name in FEATURE_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        routers.append(module.router)
    return routers
