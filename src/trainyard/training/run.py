"""Entry point of a model job: ``python -m trainyard.training.run JOB_DIR``.

Reads JOB_DIR/spec.json, writes only its work folder (core/paths.py), reports ``running``,
continues from the job's latest checkpoint if it has one (so a job killed at any moment
resumes exactly where its last snapshot left it), trains, and reports ``done``. A failure
reports ``failed`` with a message for the user (the traceback goes to log.txt) and exits 1.
SIGTERM (abort) or SIGINT stops at the next step boundary, reports ``aborted`` and exits 143;
the checkpoints already written stay.

Started by torch.distributed.run (a job on several GPUs, CPU processes or nodes), it is one rank
of the job: it joins the process group (distributed.py), takes rank 0's spec and checkpoint, and
trains its shard. Rank 0 alone writes events and checkpoints. On another node whose job is a
job of its own (each node ran ``trainyard train --node-rank R``), the node's first process
reports that job's status and metrics too, so each node's trainyard shows it; checkpoints stay
with rank 0. A rank other than 0 that fails leaves its message in ``rank-N.error`` and its
traceback in output.txt; rank 0 reports the job failed with that message.

The process scaffold (stop signals, reporting, exit codes) is core.jobproc's; this module adds
what is particular to ranks.

This process imports nothing from the web, database or scheduler code: it reads its job folder
and writes to it.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from trainyard.core import environment
from trainyard.core.environment import die_with_parent
from trainyard.core.events import EventWriter
from trainyard.core.gc_control import collect_from_here, pause_collection
from trainyard.core.jobproc import EXIT_ABORTED, EXIT_FAILED, Aborted, StopFlag, exit_process, run_job
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.training import fence


class RankEvents(EventWriter):
    """The job's EventWriter on the rank that reports; silent on the others until `activate`,
    and on every rank once the fence says its cluster job ended (training/fence.py)."""

    def __init__(self, job_dir: str | os.PathLike, active: bool):
        self.job_dir = Path(job_dir)
        self._active = False
        if active:
            self.activate()

    deferred = False  # rank 0 left the job's end to its launcher (`defers_to_launcher`)

    @property
    def active(self) -> bool:
        return self._active and fence.reason() is None and not self.deferred

    def activate(self) -> None:
        if not self._active:
            super().__init__(self.job_dir)
            self._active = True

    def emit(self, type: str, **fields) -> dict:
        return super().emit(type, **fields) if self.active else {"type": type, **fields}

    def log(self, message: str, level: str = "info") -> None:
        if self.active:
            super().log(message, level)

    def close(self) -> None:
        if self._active:
            super().close()


def main(job_dir: str | Path, *, own_process: bool = False) -> int:
    """Run the model job in ``job_dir``; return the process exit code.

    ``own_process``: this is the job's process (not a test calling main), so it may tune the
    garbage collector for itself (core/gc_control.py).
    """
    if own_process:
        pause_collection()  # until the run is built: importing torch and building make no garbage
    folder = JobFolder(job_dir)
    rank = environment.torch_rank()  # set by torch.distributed.run; 0 when alone
    if environment.under_torchelastic():  # a rank under torch.distributed.run: end with the launcher
        die_with_parent(code=EXIT_FAILED)
    if rank == 0:
        for stale in folder.work.glob("rank-*.error"):  # from an earlier run of this job
            stale.unlink(missing_ok=True)
    fence.install(folder.work)  # a cluster rank: stop once its attempt has ended, wherever it is
    events = RankEvents(folder.work, active=rank == 0)
    code = run_job(events, lambda stop: _run(folder, events, stop, own_process),
                   aborted_note="aborted; the checkpoints written so far are kept",
                   describe=lambda e: _describe_end(e, folder, events),
                   unreported=lambda message: _report_rank_error(folder, rank, message))
    return EXIT_ABORTED if fence.say_stopped() else code


def _run(folder: JobFolder, events: RankEvents, stop: StopFlag, own_process: bool = False) -> None:
    # Imported here, inside the scaffold's try, so that even a broken install reports "failed".
    from trainyard.artifact.device import require_leased_gpus
    from trainyard.training import distributed, elastic
    from trainyard.training.loop import train
    from trainyard.training.spec import load_spec

    # Until the first step there is no step boundary to poll at (building the network, reading
    # the data: many seconds on a loaded machine), so a stop raises at once there; with several
    # ranks they must agree on the step, so they stop at the first one.
    stop.raise_at_once = environment.world_size() == 1

    def prepared() -> None:
        stop.raise_at_once = False  # from here the loop polls: a checkpoint is never cut short
        if own_process:
            collect_from_here()

    spec = load_spec(folder.spec)
    require_leased_gpus()  # a job given GPUs that CUDA cannot use stops now, naming the cause
    d = distributed.setup(own_process)
    # the launcher of an elastic job asks, through the fence, to stop at an epoch boundary
    should_stop = distributed.StopAgreement(stop, d, resize=fence.resize_requested)
    spec, resume = _plan(folder, spec, d, events)
    spec = elastic.fit(spec, d.world_size)  # fewer workers than asked for: the same global batch
    try:
        train(spec, folder.work, events, resume=resume, should_stop=should_stop, d=d,
              on_prepared=prepared)
    except Aborted:
        _close(should_stop, d)  # every rank agreed to stop: a clean end too
        raise
    _close(should_stop, d)


def _close(should_stop, d) -> None:
    from trainyard.training import distributed

    should_stop.close()
    distributed.teardown(d)  # only on a clean end: with a dead peer it could wait for it


def _plan(folder: JobFolder, spec, d, events: RankEvents):
    """(spec, checkpoint to resume from): this job's own, or rank 0's for every rank.

    Every rank trains rank 0's spec (with its own node's dataset folder) from rank 0's latest
    checkpoint, sent over the process group, so nodes need no shared job folder.
    """
    from trainyard.artifact.checkpoint import latest_checkpoint, load_checkpoint
    from trainyard.datasets.storage import open_split
    from trainyard.training import distributed
    from trainyard.training.spec import ModelSpec, dataset_folder
    from trainyard.training.state import TrainingError

    latest = latest_checkpoint(folder.work) if d.is_main else None
    if d.world_size == 1:
        return spec, latest
    leader = distributed.broadcast(
        {"spec": spec.model_dump(mode="json"), "job": spec.id,
         "checkpoint": load_checkpoint(latest) if latest else None} if d.is_main else None, d)
    if not d.is_main and d.local_rank == 0 and leader["job"] != spec.id:
        events.activate()  # first process of another node's own job: report to that job
        events.status(Status.RUNNING)
    own = {"dataset_dir": spec.dataset_dir, "id": spec.id, "name": spec.name, "node_rank": spec.node_rank}
    spec = ModelSpec.model_validate({**leader["spec"], **own})
    try:
        images = len(open_split(Path(dataset_folder(spec)), "train"))
    except (OSError, ValueError):
        images = -1  # reported below, on every rank alike
    counts = distributed.gather(images, d)
    if len(set(counts)) > 1:
        raise TrainingError("every node needs the same dataset: the ranks have "
                            f"{', '.join(map(str, counts))} training images ({spec.dataset_dir} here)")
    return spec, leader["checkpoint"]


def _describe_end(error: Exception, folder: JobFolder, events: RankEvents) -> str:
    """The user's message for ``error``; and where it is an elastic cluster job's lost peer,
    rank 0 leaves the job's status to its launcher (`defers_to_launcher`)."""
    message = _message(error, folder)
    if defers_to_launcher(error, message, folder):
        events.deferred = True  # run_job then records the message as a rank's error, not "failed"
    return message


def defers_to_launcher(error: Exception, message: str, folder: JobFolder) -> bool:
    """Whether rank 0 of an elastic cluster job must not write "failed" for ``error``: a peer
    that went away without a word (no rank's own error) is a lost worker, after which the
    launcher goes on with fewer workers (cluster/launcher.py: it logs the shrink) or ends the
    job itself, naming the node. Written by rank 0, "status failed" stood in the job's events
    as the job's end while it went on."""
    if not environment.attempt_fence() or environment.world_size() < 2:
        return False
    from trainyard.core.stored import read_stored
    from trainyard.training.spec import ModelSpec

    try:
        elastic = bool(read_stored(ModelSpec, folder.read_spec()).min_workers)
    except (OSError, ValueError):  # InvalidInput is a ValueError
        return False
    from trainyard.training.rank_failures import is_peer_failure

    return elastic and is_peer_failure(error) and message.startswith("another training process")


def _report_rank_error(folder: JobFolder, rank: int, message: str) -> None:
    """A rank that does not report: its traceback to output.txt, its message for rank 0."""
    if fence.reason() is not None:
        return  # the job ended: its own line says so (main), nothing goes into the job folder
    traceback.print_exc(file=sys.stderr)
    try:
        from trainyard.training.rank_failures import record_rank_error

        record_rank_error(folder.work, rank, message)
    except Exception:
        pass


def _message(error: Exception, folder: JobFolder | None = None) -> str:
    """What the user sees: our own errors (every UserError: a bad spec, weights that do not fit,
    a missing checkpoint...) speak for themselves; others get their type name."""
    try:
        from trainyard.core.errors import UserError
        from trainyard.networks import NetworkError
    except Exception:  # the install itself is broken: say what failed, nothing more
        return f"{type(error).__name__}: {error}"
    from trainyard.sandbox.job import out_of_memory_message
    from trainyard.training.disk_full import disk_full_message

    full = disk_full_message(error, folder.work) if folder is not None else None
    if full or (full := out_of_memory_message(error)):
        return full
    if isinstance(error, NetworkError):
        return f"custom network: {error}"
    if isinstance(error, UserError):
        return str(error)
    if folder is not None and environment.world_size() > 1:
        from trainyard.training import distributed, rank_failures

        if rank_failures.is_peer_failure(error):
            return rank_failures.peer_failure_message(folder.work, error, distributed.env_rank())
    text = f"{type(error).__name__}: {str(error).strip() or 'no details'}"
    line = _custom_network_line(error)
    return f"custom network: line {line}: {text}" if line else text


def _custom_network_line(error: Exception) -> int | None:
    """The deepest line of the user's network file in the error's traceback, if it passed there."""
    from trainyard.artifact.network import CUSTOM_FILENAME

    lines = [n for frame, n in traceback.walk_tb(error.__traceback__)
             if frame.f_code.co_filename == CUSTOM_FILENAME]
    return lines[-1] if lines else None


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trainyard.training.run JOB_DIR")
    code = main(sys.argv[1], own_process=True)
    # A rank too: after its last collective, a thread of its process group may still drop its hold
    # on that collective's tensor, which takes the GIL; asked for during the interpreter's teardown,
    # the GIL ends that thread mid-C++ and the rank aborts ("terminate called without an active
    # exception", from gloo's run loop) after a run that went well.
    exit_process(code)
