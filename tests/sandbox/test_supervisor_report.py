"""The supervisor (root, outside the sandbox) reports a rank's breach into ``rank-N.error`` in
the job folder, which the job writes: a link planted under that name is refused, never followed."""

from __future__ import annotations

import os

from trainyard.sandbox import supervisor
from trainyard.sandbox.policy import Policy


def test_a_planted_link_named_rank_error_is_not_followed(tmp_path, monkeypatch):
    job = tmp_path / "job"
    job.mkdir()
    victim = tmp_path / "victim.txt"  # a file of the attacker's choice outside the job folder
    victim.write_text("precious\n")
    (job / "rank-1.error").symlink_to(victim)
    monkeypatch.setenv("RANK", "1")
    supervisor._report(Policy(report_dir=str(job)), "the network started more than 8 processes")
    assert victim.read_text() == "precious\n"
    assert (job / "rank-1.error").is_symlink()


def test_a_hard_link_named_rank_error_is_not_truncated(tmp_path, monkeypatch):
    job = tmp_path / "job"
    job.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.link(victim, job / "rank-2.error")
    monkeypatch.setenv("RANK", "2")
    supervisor._report(Policy(report_dir=str(job)), "the network started more than 8 processes")
    assert victim.read_text() == "precious\n"


def test_the_report_is_written_where_there_is_no_link(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    (tmp_path / "rank-3.error").write_text("an older, longer report from an earlier run\n")
    supervisor._report(Policy(report_dir=str(tmp_path)), "the network started more than 8 processes")
    assert (tmp_path / "rank-3.error").read_text() == "the network started more than 8 processes\n"
