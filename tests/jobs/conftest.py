"""The job tests run against both stores: SQLite (the default) and a real PostgreSQL server.

Every test here that uses ``settings`` (and so ``ctx``) runs twice; ``database_url`` is the URL
under test. A test that exercises no store-specific behaviour and is slow pins itself to SQLite
with ``@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)``.
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'trainyard.db'}"
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture
def settings(settings, database_url):
    return settings.model_copy(update={"database_url": database_url})
