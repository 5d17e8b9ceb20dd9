"""The fence on a real multi-host cluster (tests/cluster/netns.py): a host cut off mid-epoch
with the launchers of two jobs on it. Each job ends (the launcher's own "lost the Ray cluster",
or the other server's "interrupted"), and every rank of both, on the cut host and on the host
still on the network, stops within seconds, with nothing written into its job's checkpoints or
events after the job's end, and its one line "stopped: job X ended (...)" in its own output.
A resume works in the fence window, while the host is still cut off: the job whose rank ran on
the host still connected at once, and the other, whose old placement group holds the cut host's
CPU, only once the first is aborted and frees the other host's: it waits meanwhile, saying so in
one line. A resume works again after the host came back.

Without the fence, the rank on the host still connected trained on for as long as Ray took to
notice its owner was gone (a minute or more), writing checkpoints into a failed job.
"""

from __future__ import annotations

import json
import signal

import pytest

from tests.cluster.test_cluster_jobs import spec, training_processes
from tests.cluster.test_netns_hosts import cluster, dataset, final, queue, request, training  # noqa: F401 (fixtures)
from tests.conftest import wait_for
from trainyard.core.paths import JobFolder
from trainyard.jobs.views.documents import job_detail

pytestmark = pytest.mark.slow


def written_after(folder: JobFolder, moment: float) -> list[str]:
    """What landed in the job's events and checkpoints after ``moment``."""
    events = [line for line in folder.events.read_text().splitlines() if json.loads(line)["time"] > moment]
    files = [p.name for p in folder.checkpoints.glob("*") if p.stat().st_mtime > moment]
    return events + files


class Resumed:
    """A job resumed from a server on the cluster: each thing it says it waits for meanwhile is
    kept, and must be one line (never a raw Ray traceback)."""

    def __init__(self, ctx, job_id: str, root):
        self.ctx, self.job_id, self.root = ctx, job_id, root
        self.said: list[str] = []
        self.folder = ctx.manager.folder(job_id)
        self.before = self.folder.log.stat().st_size if self.folder.log.exists() else 0  # its earlier runs'
        assert ctx.manager.resume(job_id).status == "queued"

    def since(self) -> str:
        return self.folder.log.read_bytes()[self.before:].decode(errors="replace")

    def _job(self):
        job = self.ctx.store.get_job(self.job_id)
        if job.status_detail and job.status_detail not in self.said:
            self.said.append(job.status_detail)
        return job

    def _wait(self, what: str, until, timeout: float):
        try:
            job = wait_for(until, timeout)
        except AssertionError:
            printed = {p.name: p.read_text(errors="replace")[-1500:]
                       for p in [*self.root.glob("server-*.txt"), self.folder.path / "output.txt"] if p.exists()}
            raise AssertionError(f"not {what} within {timeout} s: {self.ctx.store.get_job(self.job_id)}\n"
                                 f"said: {self.said}\nlog: {self.since()[-2000:]}\nprinted: {printed}") from None
        assert all("\n" not in line and "Traceback" not in line and "Error" not in line for line in self.said), \
            self.said
        return job

    def waits_for_cpus(self, timeout: float = 180):
        """The job once its launcher waits for the cluster's CPUs, saying so."""
        return self._wait("waiting for CPUs", lambda: (job := self._job()).status == "waiting"
                          and "CPU" in (job.status_detail or "") and job, timeout)

    def trains(self, timeout: float = 300):
        """The job once it trains on from its checkpoint."""
        return self._wait("resumed", lambda: (job := self._job()).status == "running"
                          and "resuming from" in self.since() and job, timeout)


def abort(ctx, job_id: str) -> None:
    with request("head", f"/api/jobs/{job_id}/abort", method="POST", timeout=60) as response:
        assert response.status == 200
    assert final(ctx, job_id, timeout=120).status == "aborted", ctx.store.get_job(job_id)


def test_a_cut_host_ends_its_jobs_every_rank_stops_and_writes_nothing_after_and_resume_works(cluster, dataset):  # noqa: F811
    hosts, ctx, root = cluster
    hosts.signal("server-head", signal.SIGSTOP)  # the server on w1 starts both: their launchers run there
    try:
        jobs = [queue(ctx, spec(dataset, workers=1, batch_size=8, epochs=500), f"fenced-{i}") for i in (1, 2)]
        for job in jobs:
            assert training(ctx, job.id), ctx.store.get_job(job.id)
    finally:
        hosts.signal("server-head", signal.SIGCONT)
    assert {ctx.store.get_job(j.id).owner_host for j in jobs} == {"ty-w1"}
    where = {j.id: job_detail(ctx.manager, ctx.store.get_job(j.id)).as_json()["workers"][0]["host"] for j in jobs}
    assert sorted(where.values()) == ["ty-w1", "ty-w2"], where  # a CPU each
    ranks = {j.id: training_processes(ctx.manager.folder(j.id).path) for j in jobs}
    assert all(len(r) == 1 for r in ranks.values()), ranks

    hosts.cut("w1")  # its launchers, its server and one rank go on, unreachable
    try:
        for job in jobs:
            ended = final(ctx, job.id, timeout=240)  # the server on the head ends it
            assert ended.status == "failed" and "interrupted" in ended.error, ended.error
            folder = ctx.manager.folder(job.id)
            rank = next(iter(ranks[job.id].values()))
            assert wait_for(lambda rank=rank: not rank.is_running() or rank.status() == "zombie", 60), \
                f"the rank on {where[job.id]} trains on after its job ended"
            assert written_after(folder, ended.finished_at) == [], where[job.id]
            output = "".join(p.read_text() for p in folder.path.glob("output-rank-*.txt"))
            assert f"stopped: job {job.id} ended (" in output, output[-2000:]
        # In the fence window (the old launchers cut off with w1, one still holding w1's CPU through
        # its placement group), the server on the head resumes both. The one whose rank was on w2
        # trains there; the other must wait for a CPU (w1 is cut off, w2 taken), saying so in one
        # line, and train on w2 once the first one is aborted, with w1 still cut off.
        survivor = next(j for j in jobs if where[j.id] == "ty-w2")
        other = next(j for j in jobs if where[j.id] == "ty-w1")
        Resumed(ctx, survivor.id, root).trains()
        waiting = Resumed(ctx, other.id, root)
        detail = waiting.waits_for_cpus().status_detail  # w2's CPU taken, w1's cut off (or declared dead)
        assert detail in ("waiting for 1 CPU on the cluster (0 free)",
                          "waiting for Ray to reserve 1 CPU on the cluster"), detail
        abort(ctx, survivor.id)
        waiting.trains()
        assert "Traceback" not in waiting.since(), waiting.since()
        abort(ctx, other.id)
    finally:
        hosts.cut("w1", up=True)

    # w1 is back (its server with what it read before the cut; its Ray node perhaps declared dead
    # meanwhile): a job resumes again, on whichever server and node take it.
    Resumed(ctx, survivor.id, root).trains()
    abort(ctx, survivor.id)
