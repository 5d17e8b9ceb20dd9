"""Watch a sandboxed training process from outside its sandbox: no more than N processes.

A training job whose network is user code may start processes (its data loader, torch's
distributed launcher), so seccomp cannot forbid them as it does for checks; and RLIMIT_NPROC
is no bound where it matters most: the kernel never enforces it for root (CI, most GPU
servers), and for anyone else it counts every process of the uid, the server's too. A cgroup's
``pids.max`` would, but needs a writable cgroup tree, which an unprivileged user and many
containers lack. So the job runs under a small supervisor (this module): it forks the job,
which confines itself (sandbox/policy.py) and execs the command, and counts the job's processes
twice a second. The supervisor is a child subreaper, so a process that double-forks out of
the job's tree is adopted by it and still counted; over the limit, it kills every one of them
and reports the job failed, "the network started more than N processes". The supervisor runs
none of the user's code and keeps the job's pid (the runner's bookkeeping is unchanged): it
ends with the job's exit code, or its signal.

Torch-free, like all of core.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

import psutil

from trainyard.core import environment, jobfiles
from trainyard.core.environment import die_with_parent
from trainyard.core.events import EventWriter
from trainyard.core.status import Status
from trainyard.sandbox import cgroups, job_bounds, namespaces, rank_network
from trainyard.sandbox import policy as sandbox

POLL_S = 0.5  # a scan of /proc costs a few milliseconds; twice a second is noise beside training
WORK_SCAN_S = 5.0  # the work folder's bytes (sandbox/job_bounds.py): a walk of its files
_PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)


def too_many_processes(limit: int) -> str:
    return (f"the network started more than {limit} processes, the most a training job running "
            "user code may have; they were stopped")


def run(policy: sandbox.Policy, command: list[str]) -> int:
    """Run ``command`` confined to ``policy``, watched; the exit status to end with (negative:
    the signal that ended the job)."""
    if environment.under_torchelastic():  # a cluster rank: ends with the actor that started it
        die_with_parent()
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    me = os.getpid()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    # Abort is SIGTERM to the whole process group: the job stops itself; this process waits.
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), lambda *_: None)
    try:  # a multi-node cluster rank: its own job's peers only (sandbox/rank_network.py)
        network = rank_network.Guard.start(policy, me)
    except subprocess.CalledProcessError as exc:
        _report(policy, f"could not hold this rank to its job's peers (nft: {exc.stderr.strip()[:300]})")
        return 1
    # Its memory, shared memory included, and its tasks, counted by the kernel (sandbox/cgroups.py).
    # pids.max counts threads too, below the machine's own limit (sandbox/job_bounds.py)
    tasks = job_bounds.task_limit(policy.max_processes) if policy.max_processes else None
    group = cgroups.Group.create("job", policy.memory_mb, tasks)
    try:
        status = _watch(policy, command, me, network, group)
        if group is not None and (over := group.over_memory("the training job")):
            _report(policy, over)
            return 1
        return status
    finally:
        if network is not None:
            network.close()
        if group is not None:
            group.remove()


def _watch(policy: sandbox.Policy, command: list[str], me: int, network: rank_network.Guard | None,
           group: cgroups.Group | None) -> int:
    job = os.fork()
    if job == 0:
        _start(policy, command, me, group)
    if network is not None:
        network.started()
    scanned = time.monotonic()
    while True:
        status = _reap(job)
        if status is not None:
            _kill_all(me)  # what the user's code left behind ends with its job
            return status
        breach = _breach(policy, me, time.monotonic() - scanned >= WORK_SCAN_S)
        if breach:
            _kill_all(me)
            _report(policy, breach)
            return 1
        if time.monotonic() - scanned >= WORK_SCAN_S:
            scanned = time.monotonic()
        if network is not None:
            network.check()
        signal.sigtimedwait({signal.SIGCHLD}, POLL_S)


def _breach(policy: sandbox.Policy, me: int, scan_work: bool) -> str | None:
    """Why the job must be stopped now: too many processes, too many tasks (threads counted
    even without a cgroup), or, when ``scan_work``, a work folder over its bound; else None."""
    limit = policy.max_processes or 0
    if limit:
        below = _descendants(me)
        if len(below) > limit:
            return too_many_processes(limit)
        if job_bounds.tasks_of(below) > (tasks := job_bounds.task_limit(limit)):
            return job_bounds.over_tasks(tasks)
    if scan_work and policy.work_mb and policy.report_dir:
        if job_bounds.folder_bytes(policy.report_dir) > policy.work_mb << 20:
            return job_bounds.over_work(policy.work_mb)
    return None


def _start(policy: sandbox.Policy, command: list[str], parent: int, group: cgroups.Group | None) -> None:
    """In the forked child: exec the command inside the namespaces (sandbox/namespaces.py), or
    confine in place and exec it where there are none; never returns."""
    try:
        if group is not None:
            group.attach(os.getpid())  # before anything runs: all the job starts is in it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        die_with_parent(parent)  # the job never outlives its supervisor
        if namespaces.available():
            # bwrap itself ignores an abort's SIGTERM (sandbox/enter.py restores it for the job),
            # and keeps this session: the job's process group still reaches the training process.
            for name in ("SIGTERM", "SIGINT", "SIGHUP"):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
            argv = namespaces.command(policy, command, new_session=False)
        else:
            for name in ("SIGTERM", "SIGINT", "SIGHUP"):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
            sandbox.enter(policy)
            argv = command
        os.execvp(argv[0], argv)
    except BaseException as exc:  # noqa: BLE001 - whatever failed, the child must not return
        print(f"trainyard sandbox: {exc}", file=sys.stderr, flush=True)
    os._exit(126)


def _reap(job: int) -> int | None:
    """Reap every ended child (adopted ones too); the job's status once it has ended."""
    result = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return result
        if pid == 0:
            return result
        if pid == job:
            result = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _descendants(root: int) -> set[int]:
    """Every process below ``root`` (psutil reads /proc's parent links)."""
    try:
        return {child.pid for child in psutil.Process(root).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def _kill_all(root: int, within_s: float = 120.0) -> None:
    """SIGKILL every descendant, again and again (a fork loop makes new ones meanwhile), and reap
    them, until none is left: this process must not end before them, or the last ones would be
    handed to init, out of reach. Hundreds of processes as big as torch's take seconds to die
    on a busy machine; ``within_s`` is there only so that this never hangs."""
    started = time.monotonic()
    killed: set[int] = set()
    while (left := _descendants(root)) and time.monotonic() - started < within_s:
        for pid in left:  # again for those still dying: harmless
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        killed |= left
        time.sleep(0.05)
        _reap(-1)
    if killed:
        print(f"trainyard: stopped {len(killed)} processes in {time.monotonic() - started:.1f} s",
              file=sys.stderr, flush=True)


def _report(policy: sandbox.Policy, message: str) -> None:
    """Say why the job ended: on stderr (the job's output), and in the job folder the policy
    names: its failed status, or for a rank other than 0 (a cluster's) the ``rank-N.error``
    that rank 0 and the launcher report from (training/distributed.py)."""
    print(f"trainyard: {message}", file=sys.stderr, flush=True)
    if not policy.report_dir:
        return
    rank = environment.torch_rank()
    try:
        if rank:
            # The job folder is the job's: a link planted there is refused, not followed (core/jobfiles.py).
            jobfiles.write_text(policy.report_dir, f"rank-{rank}.error", message + "\n")
            return
        with EventWriter(policy.report_dir) as events:
            events.log(message, "error")
            events.status(Status.FAILED, error=message)
    except OSError:
        pass


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: python -m trainyard.sandbox.supervisor POLICY_JSON -- COMMAND...")
    status = run(sandbox.Policy.from_json(argv[0]), argv[2:])
    if status < 0:  # end the way the job ended, so that the runner describes it alike
        if -status not in (signal.SIGKILL, signal.SIGSTOP):  # the only two it cannot catch
            signal.signal(-status, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-status})
        os.kill(os.getpid(), -status)
    sys.exit(status & 0xFF)


if __name__ == "__main__":
    main(sys.argv[1:])
