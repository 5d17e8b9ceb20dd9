"""The adversary's payloads of issue 28 (bench/security/adversary_trust.py) run against the app, and
every one is blocked: links and FIFOs planted in a job folder, a rewritten spec.json, a
checkpoint's false claim, a caller without the credential, a grid bomb, the /dev/shm ring."""

from __future__ import annotations

import os

from bench.security.adversary_payloads import Target, table
from bench.security.adversary_trust import PAYLOADS, run_trust_payloads

from trainyard.inference import worker_pool as workers
from trainyard.sandbox import policy as sandbox


def test_every_trust_payload_is_blocked(settings, client_for, tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "require", lambda: True)
    with client_for(settings, run_scheduler=False) as client:
        target = Target(client, client.app.state.ctx, os.getpid(), client.app.state.auth_token, tmp_path)
        rows = run_trust_payloads(target)
    workers.POOL.close()
    printed = table(rows)
    print(printed)
    assert [name for name, _, _ in rows] == [
        "planted links", "planted FIFOs", "rewritten spec.json",
        "false checkpoint claim", "no credential", "sweep grid bomb (72)",
        "/dev/shm decode ring"], printed
    assert all(result == "blocked" for _, result, _ in rows), printed
    assert len(PAYLOADS) == len(rows)
