"""Schemathesis over every operation of the live app's /openapi.json: no 5xx, no response that
breaks its documented schema (web/schemas/), no status code it does not document, no content
type it does not name. A bounded number of examples per operation keeps it near a minute.

The app runs without its scheduler (queued jobs stay queued), in a temporary home with one
built-looking dataset, so generated requests touch real rows and folders but start nothing.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from trainyard.jobs.kinds.precheck import cache_for
from trainyard.jobs.scheduling.resources import Pools
from trainyard.networks import cache as network_cache
from trainyard.networks import registry
from trainyard.web.app import create_app

EXAMPLES = 4  # per operation; about 40 operations: under a minute in all
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance]
# Every JSON route declares a response model (tests/web/test_openapi_responses.py checks that),
# so the schema check compares each answer with what /openapi.json documents.


def _quick_check(source, num_classes, in_channels, image_size, timeout=60, *, network=None, **_):
    """Stands in for the child process that builds a network (seconds each, tested in
    tests/networks): here only the HTTP layer around it is under test."""
    return {"ok": True, "layers": [], "params": 0}


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    from trainyard.settings import Settings

    tmp = tmp_path_factory.mktemp("schemathesis")
    (tmp / "data").mkdir()
    app = create_app(Settings(home=tmp / "home", data_roots=[tmp / "data"]),
                     pools=Pools(dataset_slots=1, cpu_slots=1, gpus=[]), run_scheduler=False)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(network_cache, "check_network_isolated", _quick_check)
    # The first listing counts every network's parameters (slow once, then cached).
    counts = cache_for(app.state.ctx)
    for info in registry.list_networks():
        counts.parameter_count(info.name)
    yield schemathesis.openapi.from_asgi("/openapi.json", with_credential(app, app.state.auth_token))
    monkeypatch.undo()


def with_credential(app, token: str):
    """``app`` as a caller holding the server's credential reaches it (every door needs one)."""
    header = (b"authorization", f"Bearer {token}".encode())

    async def credentialed(scope, receive, send):
        if scope["type"] == "http":
            scope = {**scope, "headers": [*scope.get("headers", []), header]}
        await app(scope, receive, send)

    return credentialed


def _run_operation(operation) -> None:
    @given(operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case) -> None:
        case.call_and_validate(checks=CHECKS)

    run()


@pytest.mark.slow
def test_no_server_errors_and_no_schema_violations(api_schema):
    failures, operations = {}, 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        operations += 1
        try:
            _run_operation(operation)
        except Exception as exc:  # one operation's failure must not hide the others'
            failures[operation.label] = str(exc).splitlines()[:6]
    assert operations >= 35
    assert failures == {}
