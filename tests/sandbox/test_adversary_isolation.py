"""The adversary's network and memory payloads (bench/security/adversary_isolation.py) are blocked: a
confined cluster rank reaches none of three host ports once its group formed, a check holding
tmpfs and a tensor past its limit is stopped, a link named rank-1.error is not followed by
the supervisor, a rank cannot reach the work folder of another job on its uid, and a rank can
neither rewrite nor delete its fence. Each is "n/a" where this machine lacks what it tests
(root, nft, a cgroup)."""

from __future__ import annotations

import pytest
from bench.security.adversary_isolation import PAYLOADS, run_isolation_payloads
from bench.security.adversary_payloads import table

from trainyard.sandbox import namespaces

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not namespaces.available(), reason=f"no namespaces here: "
                                                   f"{namespaces.unavailable_reason()}")]


def test_the_isolation_payloads_are_blocked(tmp_path):
    rows = run_isolation_payloads(tmp_path)
    printed = table(rows)
    print(printed)
    assert len(rows) == len(PAYLOADS)
    assert all(result in ("blocked", "n/a") for _, result, _ in rows), printed
