"""The adversary's payloads of issue 28 point 3 against the split job folder (core/paths.py): a
confined job that rewrites its spec, plants links and FIFOs named like the server's files in its
work folder, and replaces its work folder by a link; then the server does what it does with a
job's folder (serves its log and page, lists and downloads its checkpoints, resumes it, hands
it back to the sandbox, writes its supervisor's report) and the harness judges from outside.

The job is a real process in its sandbox (jobs/runs/runner.launch, as the server starts one
whose network is user code), so what it could do is what the sandbox lets it. Each payload
returns (payload, "reached" | "blocked", detail) like bench/security/adversary_payloads.py; all are quick
(one sandboxed process, a few requests): tests/sandbox/test_adversary_split.py runs them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.security.adversary_payloads import Target, _row, concurrent_gets, run_each

SECRET = "root:$6$split-adversary:19000::::::"
SERVER_NAMES = ("output.txt", "server.log", "spec.json", "log.txt", "events.jsonl", "rank-1.error")
# What the job runs in its sandbox: argv[1] its job folder, argv[2] the secret's path (outside it).
HOSTILE = r"""
import json, os, sys
job, secret = sys.argv[1], sys.argv[2]
work = os.path.join(job, "work")
did = {}
def attempt(name, act):
    try:
        act()
        did[name] = "done"
    except OSError as exc:
        did[name] = exc.strerror
def rewrite_spec():
    with open(os.path.join(job, "spec.json"), "w") as f:
        f.write(json.dumps({"network": "lenet", "network_source": None, "dataset_dir": "/", "processes": 4}))
attempt("rewrite spec.json", rewrite_spec)
attempt("plant beside the spec", lambda: os.symlink(secret, os.path.join(job, "server.log")))
for name in NAMES:
    attempt("link " + name, lambda name=name: os.symlink(secret, os.path.join(work, name)))
os.makedirs(os.path.join(work, "checkpoints"), exist_ok=True)
attempt("fifo checkpoint", lambda: os.mkfifo(os.path.join(work, "checkpoints", "epoch-0001.pt")))
attempt("link checkpoint", lambda: os.symlink(secret, os.path.join(work, "checkpoints", "epoch-0002.pt")))
attempt("link checkpoint to /", lambda: os.symlink("/", os.path.join(work, "checkpoints", "epoch-0003.pt")))
def replace_work():
    os.rename(work, work + ".old")
    os.symlink(os.path.dirname(secret), work)
attempt("replace work by a link", replace_work)
print("HOSTILE " + json.dumps(did), flush=True)
""".replace("NAMES", repr(SERVER_NAMES))


@dataclass
class Planted:
    """A confined job that ran HOSTILE: its id, its folder, what it said it did, the secret."""

    job_id: str
    folder: object  # core.paths.JobFolder
    did: dict
    secret: Path
    spec_before: bytes


_RUNS: dict[int, Planted] = {}  # one hostile run per target, shared by the payloads


def hostile_job(target: Target) -> Planted:
    """Create a job recorded as user code and run HOSTILE in its sandbox, once per target."""
    if id(target) in _RUNS:
        return _RUNS[id(target)]
    from trainyard.jobs.runs import runner
    from trainyard.jobs.store import confinement as confinement_record

    ctx = target.ctx
    secret = target.scratch / "split-secret" / "shadow"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text(SECRET + "\n")
    job = ctx.manager.create("model", "splitter", {"network_source": "def build(): ...", "processes": 1},
                             needs={"pool": "cpu"})
    folder = ctx.manager.folder(job.id)
    before = folder.spec.read_bytes()
    confinement = confinement_record.recall(ctx.store, job, ctx.settings.jobs_dir)
    command = [sys.executable, "-c", HOSTILE, str(folder.path), str(secret)]
    proc = runner.launch(command, folder, [], confinement)
    proc.wait(300)
    said = [line for line in folder.output.read_text().splitlines() if line.startswith("HOSTILE ")]
    did = json.loads(said[-1].removeprefix("HOSTILE ")) if said else {"ran": f"no report (exit {proc.returncode})"}
    _RUNS[id(target)] = Planted(job.id, folder, did, secret, before)
    return _RUNS[id(target)]


def rewritten_spec(target: Target) -> tuple[str, str, str]:
    run = hostile_job(target)
    changed = run.folder.spec.read_bytes() != run.spec_before
    return _row("job rewrites spec.json", changed, "the server's spec.json changed" if changed
                else f"spec.json unchanged ({run.did.get('rewrite spec.json')})")


def replaced_work(target: Target) -> tuple[str, str, str]:
    run = hostile_job(target)
    work = run.folder.path / "work"
    replaced = work.is_symlink() or not run.folder.split
    return _row("work folder -> link", replaced, "its work folder is a link now" if replaced
                else f"still its own folder ({run.did.get('replace work by a link')})")


def planted_names(target: Target) -> tuple[str, str, str]:
    """Links named like the server's files: what the log, the page and a download serve."""
    run = hostile_job(target)
    client = target.client
    served = "".join(client.get(path).text for path in (
        f"/api/jobs/{run.job_id}/log", f"/api/jobs/{run.job_id}", f"/api/models/{run.job_id}/download?epoch=2"))
    reached = "split-adversary" in served
    planted = sum(run.did.get(f"link {n}") == "done" for n in SERVER_NAMES)
    return _row("links as server files", reached, "a response served the linked file" if reached
                else f"{planted} of {len(SERVER_NAMES)} planted in work/, none followed")


def server_writes(target: Target) -> tuple[str, str, str]:
    """What the server writes for the job after it ran: a resume's note, its sandbox handed
    back (the work folder given to the sandbox uid), a supervisor's rank report."""
    from trainyard.jobs.runs.sandbox import sandboxed
    from trainyard.jobs.store import confinement as confinement_record
    from trainyard.sandbox import policy as sandbox
    from trainyard.sandbox import supervisor

    run = hostile_job(target)
    ctx = target.ctx
    owner = run.secret.stat().st_uid
    ctx.store.update_job(run.job_id, status="failed")  # as if it had ended: resumable
    target.client.post(f"/api/jobs/{run.job_id}/resume")
    job = ctx.store.get_job(run.job_id)
    sandboxed(["true"], run.folder, [], confinement_record.recall(ctx.store, job, ctx.settings.jobs_dir))
    os.environ["RANK"] = "1"
    try:
        supervisor._report(sandbox.Policy(report_dir=str(run.folder.work)), "split-adversary report")
    finally:
        del os.environ["RANK"]
    text = run.secret.read_text()
    reached = text != SECRET + "\n" or run.secret.stat().st_uid != owner
    return _row("server writes through", reached, "the linked file was written or given away" if reached
                else "resume, sandbox hand-back and rank report left the linked file alone")


def planted_fifos(target: Target, requests: int = 8) -> tuple[str, str, str]:
    """A FIFO named as a checkpoint: listing, page and download answer at once."""
    run = hostile_job(target)
    paths = [f"/api/models/{run.job_id}/download?epoch=1", f"/api/jobs/{run.job_id}"] * (requests // 2)
    answers, hung = concurrent_gets(target.client, paths, 60)
    return _row("FIFO as a checkpoint", hung > 0, f"{hung} of {len(paths)} requests hung" if hung
                else f"{len(paths)} requests answered {sorted(set(answers))} ({run.did.get('fifo checkpoint')})")


def linked_checkpoint(target: Target) -> tuple[str, str, str]:
    """Its checkpoint a link to /: what an inference job of the model would be given to read."""
    from trainyard.jobs.runs.sandbox import sandboxed
    from trainyard.jobs.store import confinement as confinement_record

    run = hostile_job(target)
    ctx = target.ctx
    checkpoint = run.folder.work / "checkpoints" / "epoch-0003.pt"
    job = ctx.manager.create("classify-many", "c", {"kind": "classify-many", "model_id": run.job_id,
                                                    "checkpoint": str(checkpoint), "folder": str(target.scratch),
                                                    "epoch": 3}, needs={"pool": "inference"})
    facts = confinement_record.recall(ctx.store, job, ctx.settings.jobs_dir)
    command = sandboxed(["true"], ctx.manager.folder(job.id), [], facts)
    policy = json.loads(command[command.index("trainyard.sandbox.supervisor") + 1])
    reached = str(checkpoint) in policy["read"] or "/" in policy["read"]
    return _row("checkpoint -> /", reached, "an inference job of it would read /" if reached
                else f"the link is not bound ({run.did.get('link checkpoint to /')})")


PAYLOADS: dict[str, Callable[[Target], tuple[str, str, str]]] = {
    "spec": rewritten_spec, "work-link": replaced_work, "names": planted_names,
    "writes": server_writes, "fifo": planted_fifos, "checkpoint-link": linked_checkpoint,
}


def run_split_payloads(target: Target) -> list[tuple[str, str, str]]:
    rows = run_each(PAYLOADS, target)
    _RUNS.pop(id(target), None)
    return rows
