"""An archive imported twice beside its original: three models the home list tells apart
(issue 31.9: all three were named after the exported job)."""

from __future__ import annotations

import pytest

from tests.inference.test_import import archive, upload  # noqa: F401 (archive is a fixture)


@pytest.mark.slow  # three imports, each read in a sandboxed child

def test_imports_get_distinct_names_that_say_where_they_came_from(client, trained, archive):  # noqa: F811
    data = archive.read_bytes()
    first, second = (upload(client, data).json() for _ in range(2))
    original = client.get(f"/api/models/{trained.model_id}").json()["name"]
    assert first["name"].startswith(f"{original} (imported")
    assert second["name"].startswith(f"{original} (imported") and second["name"] != first["name"]
    home = client.get("/").text
    for job in (first, second):
        assert f'<a href="/models/{job["id"]}">{job["name"]}</a>' in home
    named = upload(client, data, name="my own name").json()
    assert named["name"] == "my own name"  # a name given is kept as it is
