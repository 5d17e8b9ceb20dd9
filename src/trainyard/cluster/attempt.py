"""One attempt at running a cluster job: place its ranks, start them, watch them until they end.

An attempt ends in one `Outcome`: done (every rank exited 0), aborted (we were asked to stop,
or the ranks agreed to), failed (a rank reported an error of the training itself: no restart
would help), lost (a training process was killed, or its actor or node went away: a restart on
the resources that remain may help), head (the cluster's head stopped answering at RAY_ADDRESS
for HEAD_LOST_S: the ranks are told to stop and given STOP_S; without a head Ray ends every
worker within about a minute anyway), or storage (a node cannot read the dataset or write the
job folder). Whatever the outcome, the attempt's actors and placement group are gone when `run`
returns, and with them every training process (they end with their actor).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainyard.cluster.connect import address, unreachable
from trainyard.cluster.job_spec import LaunchSpec
from trainyard.cluster.placement import Placement, WorkerInfo, rank_environments, rank_order, worker_docs
from trainyard.cluster.previous_runs import launch_token, prefix, remove_previous
from trainyard.cluster.rank_worker import RankWorker
from trainyard.core.environment import MEMORY_SETTING
from trainyard.core.events import EventWriter
from trainyard.core.formatting import process_end
from trainyard.core.jobproc import EXIT_ABORTED, one_line
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.sandbox.recorded import VARIABLE as RECORDED

ENTRY_POINT = ["python", "-m", "trainyard.training.run"]
POLL_S = 0.5
ANSWER_S = 10.0  # an actor silent this long is taken for lost (its node is gone or hung)
SETTLE_S = 3.0  # after one rank ends badly, how long the others get to end by themselves
STOP_S = 7.0  # abort: SIGTERM, this long for the ranks to agree and report, then kill
HEAD_LOST_S = 10.0  # the head's port unanswered this long: the cluster is lost (Ray gives up after 60)
HEAD_CHECK_S = 2.0
# The launcher's thread settings (a local job's process inherits them) go to every rank, and
# the checkpoint writer's documented test hook (checkpoint_writer.py) with them.
# RECORDED: how the server recorded the job's confinement, which each rank's node confines it by.
PASSED_ON = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TRAINYARD_CHECKPOINT_HOLD", MEMORY_SETTING, RECORDED)


@dataclass(frozen=True)
class Outcome:
    kind: str  # done | aborted | failed | lost | head | storage
    message: str | None = None


class HeadLost(Exception):
    """The cluster's head has not answered at RAY_ADDRESS for HEAD_LOST_S (the message says so)."""


class Attempt:
    def __init__(self, ray: Any, folder: JobFolder, spec: LaunchSpec, placement: Placement, events: EventWriter,
                 should_stop: Callable[[], bool], number: int = 0):
        self.ray, self.folder, self.spec, self.placement = ray, folder, spec, placement
        self.events, self.should_stop, self.number = events, should_stop, number
        self.actors: list[Any] = []
        self.infos: list[WorkerInfo] = []
        self.pg: Any = None  # ray's PlacementGroup, once asked for
        self._head_checked, self._head_silent_since = 0.0, None  # type: float, float | None
        self.head_lost = False
        self.token = launch_token()  # in every name: an earlier run's leftovers never collide

    def run(self) -> Outcome:
        from ray.exceptions import RayError

        try:
            if not self._place():
                return Outcome(Status.ABORTED)
            try:
                problem = self._start_actors()
            except RayError as exc:  # an actor (or its node) died before its rank started
                return Outcome("lost", f"a worker of this job was lost while starting: {one_line(exc)}")
            if problem:
                return Outcome("storage", problem)
            return self._watch()
        except HeadLost as exc:
            self.head_lost = True
            self._stop_all({})  # the ranks end cleanly (their actors still answer) and keep the checkpoints
            return Outcome("head", str(exc))
        finally:
            self._clean_up()

    def _check_head(self) -> None:
        """Raise HeadLost once the head's port has not answered for HEAD_LOST_S."""
        now = time.monotonic()
        if now - self._head_checked < HEAD_CHECK_S:
            return
        self._head_checked = now
        why = unreachable(address(), timeout_s=1.0)
        if why is None:
            self._head_silent_since = None
            return
        since = self._head_silent_since = self._head_silent_since or now
        if now - since >= HEAD_LOST_S:
            raise HeadLost(f"lost the Ray cluster: its head at RAY_ADDRESS={address()} stopped answering ({why})")

    # -- placing --------------------------------------------------------------------------------
    def _place(self) -> bool:
        """Wait for Ray to place every bundle, reporting what is missing; False if stopped first."""
        from ray.util.placement_group import placement_group

        stale = remove_previous(self.spec.id, self.token)
        if stale:
            self.events.log(f"removed what an earlier run of this job left on the cluster: {', '.join(stale)}")
        self.pg = placement_group(self.placement.bundles(), strategy="PACK",
                                  name=f"{prefix(self.spec.id)}{self.number}-{self.token}")
        shown, checked = None, 0.0
        while not self.ray.wait([self.pg.ready()], timeout=POLL_S)[0]:
            if self.should_stop():
                return False
            self._check_head()
            if time.monotonic() - checked > 2.0:
                checked = time.monotonic()
                detail = self.placement.waiting_detail(self.ray.available_resources())
                if detail != shown:
                    self.events.emit("status", status=Status.WAITING, error=None, detail=detail)
                    shown = detail
        return True

    def _start_actors(self) -> str | None:
        """One actor per bundle, ranks laid out by node; storage checked; training started."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        remote = self.ray.remote(max_restarts=0, **self.placement.actor_options())(RankWorker)
        actors = [remote.options(scheduling_strategy=PlacementGroupSchedulingStrategy(self.pg, i),
                                 name=self._actor_name(i)).remote() for i in range(self.placement.workers)]
        infos = [WorkerInfo(**doc) for doc in self.ray.get([a.where.remote() for a in actors], timeout=120)]
        order = rank_order(infos)
        self.actors, self.infos = [actors[i] for i in order], [infos[i] for i in order]
        job_dir = str(self.folder.path)
        checks = self.ray.get([a.check_storage.remote(self.spec.dataset_dir, job_dir) for a in self.actors],
                              timeout=60)
        for info, problem in zip(self.infos, checks, strict=True):
            if problem:
                return (f"{info.node_label} {problem}: TRAINYARD_HOME must be a shared folder that "
                        "every node sees at the same path")
        port = self.ray.get(self.actors[0].free_port.remote(), timeout=60)
        workers = worker_docs(self.infos, self.placement.device)
        for doc, name in zip(workers, (self._actor_name(i) for i in order), strict=True):
            doc["actor"] = name
        self.events.emit("summary", workers=workers)
        self.events.log("placed on the cluster: " + ", ".join(
            f"rank {w['rank']} on {w['host']} ({w['device']})" for w in workers))
        self.events.emit("status", status=Status.RUNNING, error=None, detail=None)
        envs = rank_environments(self.infos, port, self.spec.run_id, self.placement.device)
        niceness = os.getpriority(os.PRIO_PROCESS, 0)  # a local job's: the launcher's own
        for env in envs:
            env.update({k: os.environ[k] for k in PASSED_ON if k in os.environ})
        started = self.ray.get([a.start.remote(ENTRY_POINT + [job_dir], env, job_dir,
                                               str(self.folder.path / f"output-rank-{rank}.txt"), niceness)
                                for rank, (a, env) in enumerate(zip(self.actors, envs, strict=True))], timeout=60)
        self._report_niceness(niceness, started)
        return None

    def _report_niceness(self, wanted: int, started: list[dict]) -> None:
        behind = [f"rank {rank} on {self.infos[rank].node_label} at {s['niceness']}"
                  for rank, s in enumerate(started) if s.get("niceness") not in (None, wanted)]
        if behind:
            self.events.log(f"could not give the training processes niceness {wanted} (a local job's): "
                            f"{', '.join(behind)}; run `ray start` as root or with RAY_worker_niceness=0 "
                            "in its environment", "warning")

    def _actor_name(self, index: int) -> str:
        return f"{prefix(self.spec.id)}{self.number}-{self.token}-{index}"

    # -- watching -------------------------------------------------------------------------------
    def _watch(self) -> Outcome:
        codes: dict[int, int | str] = {}  # rank -> exit code, or "lost" / "silent"
        asked: dict[int, tuple[Any, float]] = {}  # rank -> (its pending poll, when it was asked)
        while True:
            if self.should_stop():  # checked every POLL_S, however slow the actors answer
                return self._stop_all(codes)
            self._check_head()
            codes.update(self._poll(codes, asked))
            if len(codes) == len(self.actors) and all(c == 0 for c in codes.values()):
                return Outcome(Status.DONE)
            if any(c != 0 for c in codes.values()):
                return self._settle(codes)

    def _poll(self, ended: dict[int, int | str], asked: dict[int, tuple[Any, float]],
              wait_s: float = POLL_S, silent_is_lost: bool = True) -> dict[int, int | str]:
        """Exit codes of ranks that ended, "lost" for actors that are gone and (``silent_is_lost``)
        "silent" for those that left a poll unanswered for ANSWER_S. A poll that is not answered
        within ``wait_s`` stays pending in ``asked`` for the next call."""
        from ray.exceptions import RayError

        now = time.monotonic()
        for rank, actor in enumerate(self.actors):
            if rank not in ended and rank not in asked:
                asked[rank] = (actor.poll.remote(), now)
        refs = {ref: rank for rank, (ref, _) in asked.items()}
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=wait_s) if refs else ([], [])
        out: dict[int, int | str] = {}
        for ref in ready:
            rank = refs[ref]
            del asked[rank]
            try:
                code = self.ray.get(ref)
            except RayError:
                out[rank] = "lost"
                continue
            if code is not None:
                out[rank] = code
        if silent_is_lost:
            out.update({rank: "silent" for rank, (_, since) in asked.items()
                        if rank not in out and time.monotonic() - since > ANSWER_S})
        time.sleep(max(0.0, wait_s - (time.monotonic() - now)))  # answered at once: ask again later
        return out

    def _settle(self, codes: dict[int, int | str]) -> Outcome:
        """A rank ended badly: let the others end (peers fail fast), stop the rest, say why."""
        deadline = time.monotonic() + SETTLE_S
        asked: dict[int, tuple[Any, float]] = {}
        while len(codes) < len(self.actors) and time.monotonic() < deadline:
            codes.update(self._poll(codes, asked, silent_is_lost=False))
        self._stop_ranks(set(codes))
        for rank, code in sorted(codes.items()):
            if isinstance(code, str) or code < 0:
                return Outcome("lost", self._describe_loss(rank, code))
        if all(code == EXIT_ABORTED for code in codes.values()):
            return Outcome(Status.ABORTED)
        return Outcome(Status.FAILED)

    def _describe_loss(self, rank: int, code: int | str) -> str:
        node = self.infos[rank].node_label
        if code == "lost":
            return f"training process rank {rank} on {node} was lost: its Ray worker or node went away"
        if code == "silent":
            return f"training process rank {rank} on {node} was lost: its Ray worker stopped answering"
        return f"training process rank {rank} on {node} was {process_end(int(code))}"

    def _stop_all(self, codes: dict[int, int | str]) -> Outcome:
        """Abort: SIGTERM every rank, give them STOP_S to agree and report ``aborted``."""
        self._stop_ranks(set(codes))
        deadline = time.monotonic() + STOP_S
        asked: dict[int, tuple[Any, float]] = {}
        while len(codes) < len(self.actors) and time.monotonic() < deadline:
            codes.update(self._poll(codes, asked, silent_is_lost=False))
        return Outcome(Status.ABORTED)

    def _stop_ranks(self, ended: set[int]) -> None:
        for rank, actor in enumerate(self.actors):
            if rank not in ended:
                actor.stop.remote()

    def _clean_up(self) -> None:
        """Kill the actors (their training processes die with them) and free the bundles."""
        from ray.util.placement_group import remove_placement_group

        if self.head_lost:
            return  # both go through the head, which is gone: they die with it (asking could hang)
        for actor in self.actors:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:
                pass  # already gone with its node
        if self.pg is not None:
            try:
                remove_placement_group(self.pg)
            except Exception:
                pass
