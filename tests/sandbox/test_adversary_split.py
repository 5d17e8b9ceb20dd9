"""The split job folder against a hostile job (bench/security/adversary_split.py): a job running in its
sandbox rewrites its spec, plants links and FIFOs named like the server's files in its work
folder and replaces that folder by a link; the server neither follows nor trusts any of them."""

from __future__ import annotations

import os

import pytest
from bench.security.adversary_payloads import Target, table
from bench.security.adversary_split import PAYLOADS, SECRET, run_split_payloads

from trainyard.sandbox import policy as sandbox


@pytest.mark.slow
def test_a_hostile_job_reaches_nothing_of_the_server_part(settings, client_for, tmp_path):
    if not sandbox.status()["available"]:
        pytest.skip("this machine cannot confine a job")
    with client_for(settings, run_scheduler=False) as client:
        target = Target(client, client.app.state.ctx, os.getpid(), client.app.state.auth_token, tmp_path)
        rows = run_split_payloads(target)
    printed = table(rows)
    print(printed)
    assert [name for name, _, _ in rows] == [
        "job rewrites spec.json", "work folder -> link", "links as server files",
        "server writes through", "FIFO as a checkpoint", "checkpoint -> /"], printed
    assert all(result == "blocked" for _, result, _ in rows), printed
    assert len(PAYLOADS) == len(rows)
    assert (tmp_path / "split-secret" / "shadow").read_text() == SECRET + "\n"
