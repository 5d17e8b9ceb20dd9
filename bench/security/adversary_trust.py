"""The adversary's payloads of issue 28 (points 2 to 5): what a job plants in its folder, a
rewritten spec, a checkpoint's false claim, a caller without the credential, a grid bomb and
the decode ring in /dev/shm. Each returns (payload, "reached" | "blocked", detail), like
bench/security/adversary_payloads.py, against a `Target` (a live server or a TestClient of the app).

All are quick (no training, at most one model worker): tests/web/test_adversary_trust.py runs
them in the suite; ``python bench/security/adversary.py --payloads-only`` prints them for a live server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from bench.security.adversary_payloads import Target, _detail, _row, classify, concurrent_gets, run_each

SECRET = "root:$6$adversary-hash:19000::::::"


def _job_with(target: Target, plant: Callable[[Path], None]) -> str:
    job = target.ctx.manager.create("dataset", "planted", {"name": "planted"}, needs={"pool": "dataset"})
    plant(target.ctx.manager.folder(job.id).work)  # the folder a job writes (core/paths.py)
    return job.id


def planted_links(target: Target) -> tuple[str, str, str]:
    secret = target.scratch / "shadow"
    secret.write_text(SECRET + "\n")

    def links(folder: Path) -> None:
        for name in ("log.txt", "output.txt", "events.jsonl"):
            (folder / name).unlink(missing_ok=True)
            (folder / name).symlink_to(secret)

    job_id = _job_with(target, links)
    served = target.client.get(f"/api/jobs/{job_id}/log").text + target.client.get(f"/api/jobs/{job_id}").text
    reached = "adversary-hash" in served
    return _row("planted links", reached, "the log served the linked file" if reached
                else "log.txt, output.txt, events.jsonl links not followed")


def fifos(target: Target, requests: int = 24) -> tuple[str, str, str]:
    def plant(folder: Path) -> None:
        for name in ("spec.json", "log.txt"):
            (folder / name).unlink(missing_ok=True)
            os.mkfifo(folder / name)

    job_id = _job_with(target, plant)
    answers, hung = concurrent_gets(target.client, [f"/api/jobs/{job_id}/log"] * requests, 30)
    return _row("planted FIFOs", hung > 0, f"{hung} of {requests} requests hung" if hung
                else f"{requests} requests answered {sorted(set(answers))} at once")


def rewritten_spec(target: Target) -> tuple[str, str, str]:
    from trainyard.jobs.runs.sandbox import sandboxed
    from trainyard.jobs.store import confinement as confinement_record

    ctx = target.ctx
    job = ctx.manager.create("model", "rewriter", {"network_source": "def build(): ...", "processes": 1},
                             needs={"pool": "cpu"})
    home = str(ctx.settings.home)
    ctx.manager.folder(job.id).spec.write_text(json.dumps(  # what the job writes before its resume
        {"network": "lenet", "network_source": None, "dataset_dir": home, "processes": 4}))
    facts = confinement_record.recall(ctx.store, ctx.store.get_job(job.id), ctx.settings.jobs_dir)
    try:
        command = sandboxed(["python", "-m", "trainyard.training.run", "x"], ctx.manager.folder(job.id), [], facts)
    except PermissionError as exc:
        return _row("rewritten spec.json", False, f"not started: {exc}")
    if "trainyard.sandbox.supervisor" not in command:
        return _row("rewritten spec.json", True, "the resume would run it unconfined")
    policy = json.loads(command[command.index("trainyard.sandbox.supervisor") + 1])
    reached = home in policy["read"] or policy["network"]
    return _row("rewritten spec.json", reached, "TRAINYARD_HOME readable or TCP open" if reached
                else "confined as recorded: no TRAINYARD_HOME, no TCP")


def checkpoint_claim(target: Target) -> tuple[str, str, str]:
    """A job recorded custom whose checkpoint claims a standard network (a real LeNet's)."""
    from tests.inference.deploy_helpers import make_checkpoint_job

    manager = target.ctx.manager
    job = manager.create("model", "claimer", {"kind": "model", "network_source": "def build(): ..."},
                         needs={"pool": "cpu"})
    make_checkpoint_job(manager.folder(job.id).path)  # 28x28 RGB, "network": "lenet"
    response = classify(target, job.id)
    return _row("false checkpoint claim", response.status_code != 409,
                f"{response.status_code}: {_detail(response)}")


def no_credential(target: Target) -> tuple[str, str, str]:
    """A loopback caller without the server's credential (code in a sandbox, another account)."""
    codes = {path: target.client.get(path, headers={"Authorization": ""}).status_code
             for path in ("/api/jobs", "/api/datasets", "/api/system")}
    reached = any(code < 300 for code in codes.values())
    return _row("no credential", reached, ", ".join(f"{p} {c}" for p, c in codes.items()))


def grid_bomb(target: Target) -> tuple[str, str, str]:
    ctx = target.ctx
    dataset = ctx.manager.create("dataset", "bomb target", {"name": "bomb target"}, needs={"pool": "dataset"})
    ctx.store.update_job(dataset.id, status="done", summary={"classes": ["a", "b"], "width": 28, "height": 28,
                                                            "channels": 3})
    response = target.client.post("/api/models", json={
        "name": "bomb", "datasets": [dataset.id] * 2, "networks": ["lenet", "alexnet", "googlenet"],
        "base_lrs": [0.1, 0.01, 0.001, 0.0001], "batch_sizes": [8, 16, 32], "settings": {"epochs": 1}})
    return _row("sweep grid bomb (72)", response.status_code < 300, f"{response.status_code}: {_detail(response)}")


def shm_ring(target: Target) -> tuple[str, str, str]:
    """The decode ring a build or classify-many allocates: a name in /dev/shm another job could
    open and overwrite, or a memfd."""
    from trainyard.datasets.decode_worker import Geometry
    from trainyard.datasets.pipeline import DecodePipeline

    with DecodePipeline(Geometry(8, 8, 3, "squash", "none"), 2) as pipeline:
        assert pipeline.shm is not None
        name = pipeline.shm.name
        reached = (Path("/dev/shm") / name.lstrip("/")).exists()
    return _row("/dev/shm decode ring", reached, f"{name} is a file in /dev/shm" if reached
                else "a memfd, in no folder")


PAYLOADS: dict[str, Callable[[Target], tuple[str, str, str]]] = {
    "links": planted_links, "fifos": fifos, "spec": rewritten_spec, "claim": checkpoint_claim,
    "no-credential": no_credential, "grid-bomb": grid_bomb, "shm-ring": shm_ring,
}


def run_trust_payloads(target: Target) -> list[tuple[str, str, str]]:
    return run_each(PAYLOADS, target)


def trust_against_live_server(server, scratch: Path, run: Callable[[Target], list[tuple[str, str, str]]]
                              = run_trust_payloads) -> list[tuple[str, str, str]]:
    """The payloads against ``trainyard serve`` (bench/security/adversary_server.py's Server); ``run``:
    these, or another set over the same target (bench/security/adversary_split.py's)."""
    import httpx

    from trainyard.jobs.context import open_context
    from trainyard.settings import Settings

    home = Path(server.env["TRAINYARD_HOME"])
    ctx = open_context(Settings(home=home, auth_token=server.token))
    with httpx.Client(base_url=server.url, timeout=600, headers=server.headers) as client:
        return run(Target(client, ctx, server.proc.pid, server.token, scratch))
