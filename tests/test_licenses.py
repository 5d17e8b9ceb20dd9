"""No GPL-family-only dependency: trainyard is BSD-3-Clause (LICENSE, docs/licenses.md).

Walks trainyard's declared requirements (pyproject's dependencies and every optional extra) as
installed, recursively through each distribution's own requirements (markers and extras
evaluated), and reads each one's license from its metadata (License-Expression, License, the
license classifiers). A distribution whose every alternative is GPL, AGPL or LGPL fails, unless
ALLOWED says why it is acceptable.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# Justified exceptions: distribution -> why its licence does not bind trainyard's.
ALLOWED = {
    "psycopg": "LGPL-3.0: only in the optional `postgres` extra, installed unmodified as a separate "
               "library that trainyard imports; the LGPL lets a BSD program use it so",
    "psycopg-binary": "LGPL-3.0: psycopg's compiled part, same terms as psycopg (above)",
}
COPYLEFT = re.compile(r"\b(A|L)?GPL\b|GNU (Affero |Lesser |Library )?General Public", re.IGNORECASE)


def licence_texts(dist: metadata.Distribution) -> list[str]:
    """A distribution's licence as its alternatives: the SPDX expression's, or else its classifiers
    or its License field."""
    meta = dist.metadata
    if meta.get("License-Expression"):
        return [part.strip(" ()") for part in meta["License-Expression"].split(" OR ")]
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    field = (meta.get("License") or "").strip().splitlines()[:1]
    return classifiers or field


def copyleft_only(texts: list[str]) -> bool:
    """Whether every alternative is GPL-family (no alternative, no verdict: listed elsewhere)."""
    return bool(texts) and all(COPYLEFT.search(text) for text in texts)


def installed_requirements(name: str, extras: set[str]) -> dict[str, metadata.Distribution]:
    """`name` with `extras` and everything it requires as installed, by canonical name."""
    found: dict[str, metadata.Distribution] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    stack = [(name, frozenset(extras))]
    while stack:
        current, wanted = stack.pop()
        key = canonicalize_name(current)
        if (key, wanted) in seen:
            continue
        seen.add((key, wanted))
        try:
            dist = metadata.distribution(current)
        except metadata.PackageNotFoundError:  # a marker-free requirement missing is pip's concern
            continue
        found[key] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            environments = [{"extra": extra} for extra in wanted or {""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in environments):
                stack.append((req.name, frozenset(req.extras)))
    return found


def trainyard_dependencies() -> dict[str, metadata.Distribution]:
    extras = set(metadata.distribution("trainyard").metadata.get_all("Provides-Extra") or [])
    found = installed_requirements("trainyard", extras)
    found.pop("trainyard")
    return found


def test_no_dependency_is_gpl_family_only():
    found = trainyard_dependencies()
    assert {"torch", "fastapi", "ray", "psycopg"} <= set(found)  # runtime and extras were walked
    bad = {name: licence_texts(dist) for name, dist in found.items()
           if copyleft_only(licence_texts(dist)) and name not in ALLOWED}
    assert not bad, f"GPL-family-only dependencies (trainyard is BSD-3-Clause): {bad}"


def test_the_check_sees_gpl_family_licences():
    assert copyleft_only(["GPL-3.0-or-later"]) and copyleft_only(["AGPL-3.0-only"])
    assert copyleft_only(["LGPL-3.0-only"]) and copyleft_only(["GNU General Public License v3 (GPLv3)"])
    assert not copyleft_only(["GPL-2.0-only", "MIT"])  # a choice that includes a permissive one
    assert not copyleft_only(["BSD-3-Clause"]) and not copyleft_only(["Apache Software License"])


def test_every_allowed_exception_is_still_a_dependency():
    assert set(ALLOWED) <= set(trainyard_dependencies())  # an exception outliving its reason goes
