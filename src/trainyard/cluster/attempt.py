"""One attempt at running a cluster job: place its ranks, start them, watch them until they end.

An attempt ends in one `Outcome`: done (every rank exited 0), aborted (we were asked to stop,
or the ranks agreed to), failed (a rank reported an error of the training itself: no restart
would help), lost (a training process was killed, or its actor or node went away: a restart on
the resources that remain may help), head (the cluster's head stopped answering at RAY_ADDRESS
for HEAD_LOST_S: the ranks are told to stop and given STOP_S; without a head Ray ends every
worker within about a minute anyway), or storage (a node cannot read the dataset or write the
job folder), or resize (an elastic job's ranks stopped at an epoch boundary, from a checkpoint,
because the launcher asked them to: a larger size now fits, `elastic.GrowWatch`). Whatever the
outcome, the attempt's actors and placement group are gone when `run` returns, and with them
every training process (they end with their actor).

The fence (core/fence.py): the attempt opens it (its launch and number) before its ranks start,
and ends it with the outcome's message when it ends them (a lost rank, a lost head) or when it
returns, so that a rank the launcher cannot reach (its node cut off) stops by itself within
seconds and writes nothing more, and prints "stopped: job X ended (...)" instead of reporting
``aborted``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from trainyard.cluster.connect import address, unreachable
from trainyard.cluster.elastic import GrowWatch
from trainyard.cluster.job_spec import LaunchSpec
from trainyard.cluster.liveness import Liveness
from trainyard.cluster.outcome import Ending, Gone, HeadLost, Outcome, RankEnd, Replaced
from trainyard.cluster.placement import Placement, WorkerInfo, rank_environments, rank_order, worker_docs
from trainyard.cluster.previous_runs import prefix, remove_previous
from trainyard.cluster.rank_worker import RankWorker
from trainyard.core import environment, fence
from trainyard.core.environment import MEMORY_SETTING
from trainyard.core.events import EventWriter
from trainyard.core.formatting import process_end
from trainyard.core.jobproc import EXIT_ABORTED, EXIT_PAUSED, one_line
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.sandbox.rank_network import PEERS_VARIABLE as PEERS
from trainyard.sandbox.recorded import VARIABLE as RECORDED

ENTRY_POINT = ["python", "-m", "trainyard.training.run"]
POLL_S = 0.5
SETTLE_S = 3.0  # after one rank ends badly, how long the others get to end by themselves
STOP_S = 7.0  # abort: SIGTERM, this long for the ranks to agree and report, then kill
HEAD_LOST_S = 10.0  # the head's port unanswered this long: the cluster is lost (Ray gives up after 60)
HEAD_CHECK_S = 2.0
# The launcher's thread settings (a local job's process inherits them) go to every rank, and
# the checkpoint writer's documented test hook (checkpoint_writer.py) with them.
# RECORDED: how the server recorded the job's confinement, which each rank's node confines it by.
PASSED_ON = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TRAINYARD_CHECKPOINT_HOLD", MEMORY_SETTING, RECORDED)


class Attempt:
    def __init__(self, ray: Any, folder: JobFolder, spec: LaunchSpec, placement: Placement, events: EventWriter,
                 should_stop: Callable[[], bool], number: int, launch: str, grow: GrowWatch | None = None):
        self.ray, self.folder, self.spec, self.placement = ray, folder, spec, placement
        self.grow = grow  # an elastic job below its size: asks its ranks to stop when more fits
        self.events, self.should_stop, self.number = events, should_stop, number
        self.actors: list[Any] = []
        self.infos: list[WorkerInfo] = []
        self.pg: Any = None  # ray's PlacementGroup, once asked for
        self.liveness = Liveness({}, [])  # once placed: whether a silent actor is lost (its node's answer)
        self._head_checked, self._head_silent_since = 0.0, None  # type: float, float | None
        self.head_lost = False
        self.token = launch  # the launcher's, in every name: an earlier run's leftovers never collide

    def run(self) -> Outcome:
        from ray.exceptions import RayError

        try:
            if not self._place():
                return Outcome(Ending.ABORTED)
            try:
                problem = self._start_actors()
            except RayError as exc:  # an actor (or its node) died before its rank started
                return Outcome(Ending.LOST, f"a worker of this job was lost while starting: {one_line(exc)}", True)
            if problem:
                return Outcome(Ending.STORAGE, problem)
            return self._watch()
        except Replaced:
            return Outcome(Ending.ABORTED)
        except HeadLost as exc:
            self.head_lost = True
            self._end_fence(str(exc))
            self._stop_all({})  # the ranks end cleanly (their actors still answer) and keep the checkpoints
            return Outcome(Ending.HEAD, str(exc))
        finally:
            self._end_fence("its launcher ended the attempt")  # the first end's reason stays
            self._clean_up()

    def _end_fence(self, reason: str) -> None:
        fence.end(self.folder.work, reason, by="launcher", launch=self.token)

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
        niceness = os.getpriority(os.PRIO_PROCESS, 0)  # a local job's: the launcher's own
        # The actor first gives up Ray's worker niceness (15), so that it answers polls on a loaded node.
        taken = self.ray.get([a.take_niceness.remote(niceness) for a in actors], timeout=120)
        infos = [WorkerInfo(**doc) for doc in self.ray.get([a.where.remote() for a in actors], timeout=120)]
        order = rank_order(infos)
        self.actors, self.infos = [actors[i] for i in order], [infos[i] for i in order]
        self.liveness = Liveness.of(self.ray, [i.node_id for i in self.infos], [i.node_label for i in self.infos])
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
        peers = ",".join(sorted({info.host for info in self.infos}))  # all a confined rank may reach
        if self.should_stop() or not fence.begin_attempt(self.folder.work, self.token, self.number):
            raise Replaced  # a server ended the job, or a resume launched it again meanwhile
        for env in envs:
            env.update(environment.present(PASSED_ON))
            env[PEERS] = peers
            env[fence.ENV] = fence.rank_value(self.token, self.number)
        started = self.ray.get([a.start.remote(ENTRY_POINT + [job_dir], env, job_dir,
                                               str(self.folder.path / f"output-rank-{rank}.txt"), niceness)
                                for rank, (a, env) in enumerate(zip(self.actors, envs, strict=True))], timeout=60)
        self._report_niceness(niceness, [taken[i] for i in order], [s["niceness"] for s in started])
        return None

    def _report_niceness(self, wanted: int, actors: list[int | None], ranks: list[int | None]) -> None:
        """One warning where a node kept Ray's niceness for a rank's actor or training process
        (lowering it needs CAP_SYS_NICE there); the job runs on, at a smaller share of a busy CPU."""
        behind = [f"rank {rank} on {self.infos[rank].node_label} at {ranks[rank]} (its Ray worker at {actor})"
                  for rank, actor in enumerate(actors) if {actor, ranks[rank]} - {None, wanted}]
        if behind:
            self.events.log(f"could not give the training processes niceness {wanted} (a local job's): "
                            f"{', '.join(behind)}; run `ray start` as root or with RAY_worker_niceness=0 "
                            "in its environment", "warning")

    def _actor_name(self, index: int) -> str:
        return f"{prefix(self.spec.id)}{self.number}-{self.token}-{index}"

    # -- watching -------------------------------------------------------------------------------
    def _watch(self) -> Outcome:
        codes: dict[int, RankEnd] = {}
        asked: dict[int, tuple[Any, float]] = {}  # rank -> (its pending poll, when it was asked)
        while True:
            if self.should_stop():  # checked every POLL_S, however slow the actors answer
                return self._stop_all(codes)
            self._check_head()
            if self.grow is not None and (size := self.grow.larger()):
                fence.request_resize(self.folder.work, self.token, size)  # the ranks stop at their next epoch boundary
            codes.update(self._poll(codes, asked))
            if len(codes) == len(self.actors) and all(c == 0 for c in codes.values()):
                return Outcome(Ending.DONE)
            if any(c != 0 for c in codes.values()):
                return self._settle(codes)

    def _poll(self, ended: dict[int, RankEnd], asked: dict[int, tuple[Any, float]],
              wait_s: float = POLL_S, silent_is_lost: bool = True) -> dict[int, RankEnd]:
        """Exit codes of ranks that ended, Gone.LOST for actors that are gone and (``silent_is_lost``)
        Gone.SILENT for those that left a poll unanswered as long as `Liveness` takes for lost (10 s
        on a node that does not answer either, 60 s on one that does). A poll that is not answered
        within ``wait_s`` stays pending in ``asked`` for the next call."""
        from ray.exceptions import RayError

        now = time.monotonic()
        for rank, actor in enumerate(self.actors):
            if rank not in ended and rank not in asked:
                asked[rank] = (actor.poll.remote(), now)
        refs = {ref: rank for rank, (ref, _) in asked.items()}
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=wait_s) if refs else ([], [])
        out: dict[int, RankEnd] = {}
        for ref in ready:
            rank = refs[ref]
            del asked[rank]
            try:
                code = self.ray.get(ref)
            except RayError:
                out[rank] = Gone.LOST
                continue
            if code is not None:
                out[rank] = code
        if silent_is_lost:
            out.update({rank: Gone.SILENT for rank, (_, since) in asked.items() if rank not in out
                        and self.liveness.lost(rank, self.infos[rank].node_id, time.monotonic() - since)})
        time.sleep(max(0.0, wait_s - (time.monotonic() - now)))  # answered at once: ask again later
        return out

    def _settle(self, codes: dict[int, RankEnd]) -> Outcome:
        """A rank ended badly: let the others end (peers fail fast), stop the rest, say why."""
        deadline = time.monotonic() + SETTLE_S
        asked: dict[int, tuple[Any, float]] = {}
        while len(codes) < len(self.actors) and time.monotonic() < deadline:
            codes.update(self._poll(codes, asked, silent_is_lost=False))
        lost = [self._describe_loss(rank, code) for rank, code in sorted(codes.items())
                if isinstance(code, Gone) or code < 0]
        if lost:
            self._end_fence(lost[0])  # before the others are stopped: they say why, not "aborted"
        self._stop_ranks(set(codes))
        if lost:
            gone = tuple(self.infos[rank].node_id for rank, code in sorted(codes.items()) if isinstance(code, Gone))
            return Outcome(Ending.LOST, lost[0], bool(gone), gone)
        if len(codes) == len(self.actors) and all(code == EXIT_PAUSED for code in codes.values()):
            return Outcome(Ending.RESIZE)
        if all(code == EXIT_ABORTED for code in codes.values()):
            return Outcome(Ending.ABORTED)
        return Outcome(Ending.FAILED)

    def _describe_loss(self, rank: int, code: RankEnd) -> str:
        node = self.infos[rank].node_label
        if code is Gone.LOST:
            return f"training process rank {rank} on {node} was lost: its Ray worker or node went away"
        if code is Gone.SILENT:
            return f"training process rank {rank} on {node} was lost: its Ray worker stopped answering"
        return f"training process rank {rank} on {node} was {process_end(int(code))}"

    def _stop_all(self, codes: dict[int, RankEnd]) -> Outcome:
        """Abort: SIGTERM every rank, give them STOP_S to agree and report ``aborted``."""
        self._stop_ranks(set(codes))
        deadline = time.monotonic() + STOP_S
        asked: dict[int, tuple[Any, float]] = {}
        while len(codes) < len(self.actors) and time.monotonic() < deadline:
            codes.update(self._poll(codes, asked, silent_is_lost=False))
        return Outcome(Ending.ABORTED)

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
