"""The adversary's user-code payloads (bench/security/adversary_payloads.py) run, and the quick ones
(those a sandbox is not needed for) are blocked: here the cache forgery, against this process
as the server."""

from __future__ import annotations

import os

from bench.security.adversary_payloads import PAYLOADS, QUICK, Target, run_payloads, table

from tests.inference.test_isolation import TOKEN, server  # noqa: F401


def test_the_quick_payloads_are_blocked(server, tmp_path):  # noqa: F811
    target = Target(server, server.app.state.ctx, os.getpid(), TOKEN, tmp_path)
    rows = run_payloads(target, QUICK)
    printed = table(rows)
    assert [row[0] for row in rows] == ["cache forgery"]
    assert all(result == "blocked" for _, result, _ in rows), printed
    assert set(QUICK) <= set(PAYLOADS) and "payload" in printed.splitlines()[0]
