"""The adversary's namespace payloads (bench/security/adversary_namespaces.py) are all blocked: a custom
network's worker reaches no host socket, no host /dev/shm, not the server's process, and never
runs as root on the host; the earlier user-code payloads still report blocked beside them."""

from __future__ import annotations

import os

import pytest
from bench.security.adversary_payloads import NAMESPACE_PAYLOADS, Target, run_payloads, table

from tests.inference.test_isolation import TOKEN, server  # noqa: F401
from trainyard.sandbox import namespaces

pytestmark = pytest.mark.skipif(not namespaces.available(), reason=f"no namespaces here: "
                                f"{namespaces.unavailable_reason()}")


def test_the_namespace_payloads_are_blocked(server, tmp_path):  # noqa: F811
    target = Target(server, server.app.state.ctx, os.getpid(), TOKEN, tmp_path)
    rows = run_payloads(target, (*NAMESPACE_PAYLOADS, "token", "store", "other-job", "fork"))
    printed = table(rows)
    print(printed)
    assert len(rows) == len(NAMESPACE_PAYLOADS) + 4
    assert all(result in ("blocked", "n/a") for _, result, _ in rows), printed
