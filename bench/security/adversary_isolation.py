"""The adversary's payloads for the network and memory side of issue 28: what a cluster rank, a
check and a job's supervisor reach. Each returns (payload, "reached" | "blocked", detail), like
bench/security/adversary_payloads.py, and needs no server: each runs the sandbox's own machinery here.

    rank reach     a rank of a multi-node job, confined as its node confines it (supervisor,
                   bwrap, its job's uid, the nftables hold) after its process group formed, tries
                   three ports this harness listens on at 127.0.0.1 (standing for the server's
                   API, Ray's GCS and PostgreSQL): reached if any accepts
    shm past limit a network check fills its private tmpfs and then a tensor, past its memory
                   limit together: reached if the check passed (the tmpfs did not count)
    rank error link a confined job starts more processes than it may, its job folder holding a link
                   named ``rank-1.error`` to a file of the attacker's choice: reached if the
                   supervisor's report (written as root) went into that file

    uid twin       two cluster jobs whose ids fall on one uid (rank_network.job_uid: 1 in 65,536
                   pairs do): a rank of one tries to list and append to the other's work folder,
                   which that uid owns: reached if it could (the mount namespace, not the uid, is
                   what keeps jobs apart)
    fence rewrite  a confined cluster rank tries to take its fence (core/fence.py) out of the
                   way: rewrite it as a fresh launch, delete it, rename its folder, plant one in its
                   work folder; then the server ends its job: reached if the fence is no longer the
                   server's or the rank did not see its job's end

All are quick (seconds, no training): tests/sandbox/test_adversary_isolation.py runs them; each is
"n/a" where this machine lacks what it tests (root, nft, a cgroup hierarchy).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.security.adversary_payloads import _row, run_each

from trainyard.core import fence
from trainyard.core.paths import JobFolder
from trainyard.sandbox import cgroups, namespaces, rank_network
from trainyard.sandbox import policy as sandbox
from trainyard.sandbox.job import ConfinedJob, prepare_folder, training_policy

SHM_LIMIT_MB = 1024  # above what a check forked from the warm checker already holds (torch: ~0.9 GiB)
SHM_HOG = '''
import os, tempfile, torch
from torch import nn

chunk = os.urandom(1 << 20)
for n in range(8):  # 480 MiB of tmpfs (below the checker's 512 MiB cap), files below RLIMIT_FSIZE; never mapped
    with open(os.path.join(tempfile.gettempdir(), f"hog-{n}"), "wb") as f:
        for _ in range(60):
            f.write(chunk)
hog = torch.ones(640 << 18)  # float32: 640 MiB, every page touched: past the limit with the above


def build(num_classes, in_channels, image_size):
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
'''
RANK_PROBE = '''
import socket
from trainyard.sandbox.rank_network import lock_network
lock_network()  # as training/distributed.py does once the process group formed
for port in {ports!r}:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        print(port, "reached")
    except OSError as exc:
        print(port, "refused:", exc)
'''

FENCE_PROBE = '''
import json, os, sys, time
from trainyard.core import fence
from trainyard.core import fence
from trainyard.core.paths import JobFolder

folder = JobFolder.of(os.getcwd())
forged = json.dumps({{"launch": "forged", "attempt": 0}})
tries = {{
    "rewrite": lambda: open(folder.fence / fence.FILE, "w").write(forged),
    "delete": lambda: os.unlink(folder.fence / fence.FILE),
    "rename": lambda: os.rename(folder.fence, folder.work / "gone"),
    "plant": lambda: open(folder.work / fence.FILE, "w").write(forged),
}}
for name, attempt in tries.items():
    try:
        attempt()
        print(name, "done")
    except OSError as exc:
        print(name, "refused:", exc.strerror)
print("read:", fence.read(folder.path), flush=True)
open(folder.work / "tried", "w").close()
watch = fence.Watch.for_rank(folder.path, {value!r})
deadline = time.monotonic() + 120
while watch.reason() is None and time.monotonic() < deadline:
    time.sleep(0.2)
print("fenced:", watch.reason())
'''


def _job_folder(scratch: Path, name: str, split: bool = True) -> JobFolder:
    """The job's folder, made on first use: split (core/paths.py), or as a job made before the split."""
    folder = JobFolder(scratch / "jobs" / name)
    if not split:
        folder.path.mkdir(parents=True, exist_ok=True)
    return folder if folder.split or not split else folder.create()


def _confined_rank(scratch: Path, name: str, command: list[str], **policy_changes) -> subprocess.CompletedProcess:
    """``command`` run as a cluster rank of a custom network runs: under its supervisor, confined."""
    process = _start_confined_rank(scratch, name, command, **policy_changes)
    stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _start_confined_rank(scratch: Path, name: str, command: list[str], split: bool = True,
                         **policy_changes) -> subprocess.Popen:
    folder = _job_folder(scratch, name, split)
    job = ConfinedJob(network_source="(payload)", nnodes=2, cluster={"workers": 2})
    policy = training_policy(job, folder.path, 0, {rank_network.PEERS_VARIABLE: "192.0.2.1"})  # a TEST-NET peer
    policy.report_dir = str(folder.work)
    for key, value in policy_changes.items():
        setattr(policy, key, value)
    prepare_folder(folder.path, policy)
    env = sandbox.scrubbed_environment(RANK="1", PYTHONPATH=str(Path(rank_network.__file__).parents[2]))
    return subprocess.Popen([sys.executable, "-m", "trainyard.sandbox.supervisor", policy.to_json(), "--", *command],
                            cwd=folder.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rank_reach(scratch: Path) -> tuple[str, str, str]:
    why = sandbox.status()["rank_network"].get("reason")
    if why:
        return "rank reach", "n/a", why
    listeners = {name: socket.create_server(("127.0.0.1", 0)) for name in ("API", "GCS", "PostgreSQL")}
    try:
        ports = {name: s.getsockname()[1] for name, s in listeners.items()}
        done = _confined_rank(scratch, "rank-reach", [sys.executable, "-P", "-c",
                                                      RANK_PROBE.format(ports=list(ports.values()))])
        reached = []
        for name, listener in listeners.items():
            listener.setblocking(False)
            try:
                listener.accept()[0].close()
                reached.append(name)
            except BlockingIOError:
                pass
    finally:
        for listener in listeners.values():
            listener.close()
    detail = f"reached {', '.join(reached)}" if reached else \
        f"{done.stdout.count('refused:')} of 3 refused (exit {done.returncode})"
    return _row("rank reach", bool(reached), detail)


def shm_past_limit(scratch: Path) -> tuple[str, str, str]:
    from trainyard.networks import check_network_isolated
    from trainyard.networks.isolated import CHECKER

    if cgroups.unavailable_reason():
        return "shm past limit", "n/a", f"no cgroup: {cgroups.unavailable_reason()}"
    CHECKER.warm_up()  # as a server's is: started with its own limit, not the one set below
    saved = os.environ.get("TRAINYARD_SANDBOX_MEMORY_MB")
    os.environ["TRAINYARD_SANDBOX_MEMORY_MB"] = str(SHM_LIMIT_MB)
    try:
        result = check_network_isolated(SHM_HOG, 2, 1, 4)
    finally:
        os.environ.pop("TRAINYARD_SANDBOX_MEMORY_MB")
        if saved is not None:
            os.environ["TRAINYARD_SANDBOX_MEMORY_MB"] = saved
    return _row("shm past limit", bool(result.get("ok")), str(result.get("error") or "the check passed")[:90])


def rank_error_link(scratch: Path) -> tuple[str, str, str]:
    victim = scratch / "victim.txt"
    victim.write_text("precious\n")
    link = _job_folder(scratch, "rank-error-link").work / "rank-1.error"  # where the supervisor reports
    link.unlink(missing_ok=True)
    link.symlink_to(victim)
    spawn = "import subprocess, time\nps = [subprocess.Popen(['sleep', '60']) for _ in range(6)]\ntime.sleep(60)\n"
    done = _confined_rank(scratch, "rank-error-link", [sys.executable, "-P", "-c", spawn], max_processes=3)
    reached = victim.read_text() != "precious\n"
    return _row("rank error link", reached, f"supervisor exit {done.returncode}; the link "
                + ("was followed" if reached else "was not followed"))


def uid_twin(scratch: Path) -> tuple[str, str, str]:
    if os.geteuid() != 0 or not namespaces.available():
        return "uid twin", "n/a", "a rank runs as its job's uid only as root, in namespaces"
    victim_id, attacker_id = _twin_job_ids()
    victim = _job_folder(scratch, victim_id)
    uid = rank_network.job_uid(victim_id)
    (victim.work / "events.jsonl").write_text("precious\n")
    namespaces.give(victim.work, recursive=True, uid=uid)  # as its rank's start hands it over
    probe = (f"import os\nfor act in (lambda: os.listdir({str(victim.work)!r}),\n"
             f"            lambda: open({str(victim.events)!r}, 'a').write('tampered')):\n"
             "    try:\n        act()\n        print('done')\n"
             "    except OSError as exc:\n        print('refused:', exc.strerror)\n")
    done = _confined_rank(scratch, attacker_id, [sys.executable, "-P", "-c", probe])
    reached = "done" in done.stdout.split() or victim.events.read_text() != "precious\n"
    refusals = sorted({line.partition(": ")[2] for line in done.stdout.splitlines() if line.startswith("refused")})
    return _row("uid twin", reached, f"jobs {victim_id} and {attacker_id} share uid {uid}; the other's work "
                f"folder: {', '.join(refusals) or ' '.join(done.stdout.split())[:60] or done.stderr.strip()[-60:]}")


def _twin_job_ids() -> tuple[str, str]:
    """Two job ids that `rank_network.job_uid` maps to one uid (a birthday search: a few hundred)."""
    seen: dict[int, str] = {}
    for n in range(1 << 20):
        job_id = f"uid-twin-{n}"
        uid = rank_network.job_uid(job_id)
        if uid in seen:
            return seen[uid], job_id
        seen[uid] = job_id
    raise RuntimeError("no two job ids share a uid")


def fence_rewrite(scratch: Path, split: bool = True) -> tuple[str, str, str]:
    """``split``: False for a job made before the split, whose fence's folder is in its work folder."""
    name = "fence-rewrite" if split else "fence-rewrite-unsplit"
    folder = _job_folder(scratch, name, split)
    fence.begin(folder.path, "aaaa")  # as the launcher does, then its attempt before the rank starts
    fence.begin_attempt(folder.path, "aaaa", 0)
    probe = FENCE_PROBE.format(value=fence.rank_value("aaaa", 0))
    rank = _start_confined_rank(scratch, name, [sys.executable, "-P", "-c", probe], split)
    try:
        tried = folder.work / "tried"
        deadline = time.monotonic() + 120
        while not tried.exists() and rank.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        fence.end(folder.path, "ended by the server", by="server")
        stdout, stderr = rank.communicate(timeout=300)
    finally:
        rank.kill()
    state = fence.read(folder.path)
    kept = state is not None and state.launch == "aaaa" and state.by == "server"
    saw_end = "fenced: ended by the server" in stdout
    # planting a fence in the work folder is allowed, and ignored: the fence's own folder wins
    tries = [" ".join(line.split()[:2]).rstrip(":") for line in stdout.splitlines() if line.split()[:1] in
             (["rewrite"], ["delete"], ["rename"], ["plant"])]
    detail = (f"{', '.join(tries) or 'no tries'}; fence {'kept' if kept else 'changed'}; the rank "
              f"{'saw' if saw_end else 'did not see'} its end")
    if "read:" not in stdout:
        detail += f" (rank exit {rank.returncode}: {(stderr.strip().splitlines() or [''])[-1][:80]})"
    return _row("fence rewrite", not (kept and saw_end), detail)


PAYLOADS: dict[str, Callable[[Path], tuple[str, str, str]]] = {
    "rank-reach": rank_reach, "shm-past-limit": shm_past_limit, "rank-error-link": rank_error_link,
    "uid-twin": uid_twin, "fence-rewrite": fence_rewrite}


def run_isolation_payloads(scratch: Path) -> list[tuple[str, str, str]]:
    return run_each(PAYLOADS, scratch)
