"""Early stopping across a sweep (jobs/runs/early_stop.py): the successive-halving verdicts, and the
manager stopping real processes through the abort path so that they end ``done`` with the
message, while the best run trains to the end.

Runs here are small scripts that report a planned validation accuracy per epoch (and stop on
SIGTERM as training does), so what is stopped, and when, is known; the slow test at the end
trains real LeNets."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time

import pytest

from trainyard.core.status import Status
from trainyard.jobs.kinds.registry import JobKind, get_kind, register_kind
from trainyard.jobs.kinds.sweeps import mark_early_stop
from trainyard.jobs.runs.early_stop import decide, message

T0 = 1000.0


def points(values, start=T0):
    return [(start + i, i + 1, v) for i, v in enumerate(values)]


def test_a_run_worse_than_those_that_got_there_first_is_stopped():
    runs = {"good": points([50, 70, 80, 90]), "bad": points([30], start=T0 + 10)}
    assert decide(runs, "bad") == {"epoch": 1, "judged_at": 1, "point": 1, "of": 2, "rank": 2}
    assert decide(runs, "good") is None  # the best is never stopped


def test_a_run_first_seen_past_the_rung_that_judged_it_is_still_stopped():
    # The watcher looked late: "bad" is at its third point, between rungs (points 1, 2, 4, ...).
    runs = {"good": points([50, 70, 80, 90]), "bad": points([30, 31, 32], start=T0 + 10)}
    verdict = decide(runs, "bad")
    assert verdict == {"epoch": 3, "judged_at": 1, "point": 1, "of": 2, "rank": 2}
    assert message(verdict) == "stopped early at epoch 3: bottom of 2 at epoch 1"
    assert message({**verdict, "epoch": 1}) == "stopped early at epoch 1: bottom of 2 at this point"


def test_the_best_half_goes_on_at_each_rung():
    runs = {"a": points([60, 70]), "b": points([50], T0 + 0.1), "c": points([40], T0 + 0.2),
            "d": points([45], T0 + 0.3), "e": points([55], T0 + 0.4)}
    assert decide(runs, "a") is None
    # d at point 1: 60, 50, 40, 45 have got there; the best 4 // 2 = 2 go on, d is third.
    assert decide(runs, "d") == {"epoch": 1, "judged_at": 1, "point": 1, "of": 4, "rank": 3}
    assert decide(runs, "e") is None  # second of five: in the best 5 // 2
    # c, when it got there, was the worst of three (the best 1 goes on).
    assert decide(runs, "c") == {"epoch": 1, "judged_at": 1, "point": 1, "of": 3, "rank": 3}


def test_the_first_run_of_a_sweep_run_one_after_another_is_not_stopped():
    assert decide({"first": points([10, 11, 12])}, "first") is None


SCRIPT = textwrap.dedent("""
    import json, signal, sys, time
    from pathlib import Path
    folder = Path(sys.argv[1])
    spec = json.loads((folder / "spec.json").read_text())
    events = open("events.jsonl", "a")  # its working directory: its work folder
    def emit(**event):
        events.write(json.dumps({"time": time.time(), **event}) + "\\n")
        events.flush()
    def stop(*_):
        emit(type="status", status="aborted", error=None)
        sys.exit(143)
    signal.signal(signal.SIGTERM, stop)
    emit(type="status", status="running")
    for epoch, value in enumerate(spec["curve"], 1):
        time.sleep(spec["seconds"])
        emit(type="metric", epoch=epoch, name="val_accuracy", value=value)
        emit(type="summary", epoch=epoch)
    emit(type="status", status="done", error=None)
""")


@pytest.fixture
def kind(tmp_path):
    """The "model" kind, run by the script above for this test (only model jobs can be resumed)."""
    script = tmp_path / "fake_run.py"
    script.write_text(SCRIPT)

    class Scripted(JobKind):
        def command(self, folder, gpu_ids):
            return [sys.executable, str(script), str(folder.path)]

    real = get_kind("model")
    register_kind(Scripted("model", "", lambda job, folder: {}))
    yield "model"
    register_kind(real)


def run_sweep(ctx, kind, curves, seconds=0.2):
    """A sweep of scripted runs with early stopping, run one after another as the CLI does."""
    jobs = [ctx.manager.create(kind, f"run {i}", {"curve": c, "epochs": len(c), "seconds": seconds},
                               needs={"pool": "cpu"}, group="sweep", foreground=True) for i, c in enumerate(curves)]
    jobs = mark_early_stop(ctx.store, jobs, min_epochs=0)  # no grace period: judged from epoch 1 on
    return [ctx.manager.run_foreground(job.id, poll_s=0.05) for job in jobs]


def test_the_manager_stops_hopeless_runs_which_end_done_with_the_message(ctx, kind):
    best, hopeless, middling = [60, 70, 80, 85, 90, 91], [10] * 6, [50, 65, 70, 72, 74, 75]
    ended = run_sweep(ctx, kind, [best, hopeless, middling])
    assert [j.status for j in ended] == [Status.DONE] * 3  # never failed, never aborted
    first, stopped, third = ended
    assert first.status_detail is None and first.progress == 1.0  # the best trained to the end
    assert stopped.status_detail == "stopped early at epoch 1: bottom of 2 at this point"
    assert stopped.error is None and stopped.summary["stopped_early"]["rank"] == 2
    assert stopped.summary.get("epoch", 1) < 6
    events = [json.loads(line) for line in ctx.manager.folder(stopped.id).events.read_text().splitlines()]
    assert [e for e in events if e["type"] == "status"][-1]["status"] == "aborted"  # stopped like an abort
    server_log = ctx.manager.folder(stopped.id).server_log.read_text()  # the server's lines, not the job's events
    assert "stopped early at epoch 1: bottom of 2 at this point (rank 2 of 2)" in server_log
    assert "jobs resume" in server_log
    history = [(h.status, h.detail) for h in ctx.store.history(stopped.id)]
    assert history[-1] == (Status.DONE, "stopped early at epoch 1: bottom of 2 at this point")
    assert third.summary["stopped_early"]["of"] == 3  # third of three at epoch 1: stopped too


def test_a_stopped_run_resumed_by_hand_trains_on_and_an_abort_stays_an_abort(ctx, kind):
    _, stopped = run_sweep(ctx, kind, [[60, 70, 80], [10, 10, 10]])
    assert stopped.status_detail.startswith("stopped early")
    ctx.manager.resume(stopped.id, foreground=True)
    resumed = ctx.manager.run_foreground(stopped.id, poll_s=0.05)
    assert resumed.status == Status.DONE and resumed.status_detail is None and resumed.progress == 1.0
    ctx.manager.resume(stopped.id, foreground=True)
    ctx.manager.tick(only=stopped.id)
    time.sleep(0.2)
    assert ctx.manager.abort(stopped.id).status == Status.ABORTED  # the user's abort, not a stop


# A run is stopped only if the watching manager (polling every 0.2 s) reads one of its validations
# while it still trains: on a fast machine 5 epochs of these 90 images took less than that, and the
# hopeless rate was sometimes done before anyone looked (1 run in 2 here).
EPOCHS = 30


@pytest.mark.slow  # four LeNet trainings, one after another
def test_a_real_sweep_stops_the_hopeless_rate_and_the_best_run_finishes(tmp_path, make_images):
    from typer.testing import CliRunner

    from trainyard.cli.main import app

    env = {"TRAINYARD_HOME": str(tmp_path / "home"), "TRAINYARD_DATA_ROOTS": str(tmp_path / "data"),
           "TRAINYARD_AUTH_TOKEN": ""}
    folder = make_images(tmp_path / "data" / "colours", {"a": 40, "b": 40, "c": 40}, size=(28, 28))
    made = CliRunner().invoke(app, ["dataset", "create", "--name", "colours", "--train-folder", str(folder),
                                    "--size", "28x28", "--json"], env=env)
    dataset = json.loads(made.stdout)["id"]
    result = CliRunner().invoke(app, [
        "train", "--dataset", dataset, "--network", "lenet", "--epochs", str(EPOCHS), "--val-interval", "0.5",
        "--snapshot-interval", "0.5", "--batch-size", "4", "--lr-policy", "fixed", "--seed", "1",
        # Judged from the first validation (the grace period is its own test): these short epochs
        # leave the default 3 epochs of grace too little room on a loaded machine.
        "--lr", "0.05,1e-6,0.03,0.02", "--early-stop", "--early-stop-min-epochs", "0", "--json"], env=env)
    assert result.exit_code == 0, result.output
    jobs = {job["spec"]["lr"]["base_lr"]: job for job in json.loads(result.stdout)["jobs"]}
    assert {job["status"] for job in jobs.values()} == {"done"}
    hopeless = jobs[1e-6]
    # Where it is stopped depends on when the watching manager first reads a validation of it
    # at or past the rung that judged it (a fast run on a loaded machine is read late).
    assert re.match(r"stopped early at epoch [\d.]+: bottom of \d at (this point|epoch [\d.]+)$",
                    hopeless["status_detail"] or ""), {lr: (j["status_detail"], j["best"]) for lr, j in jobs.items()}
    assert hopeless["epoch"] < EPOCHS and hopeless["snapshots"]  # its checkpoints are kept
    best = max(jobs.values(), key=lambda j: j["best"]["val_accuracy"])
    assert best["epoch"] == EPOCHS and best["status_detail"] is None
    # The compare document of two of these real runs.
    doc = json.loads(CliRunner().invoke(app, ["jobs", "compare", best["id"], hopeless["id"], "--json"],
                                        env=env).stdout)
    assert doc["differs"] == ["lr.base_lr"]
    assert doc["series"][hopeless["id"]]["val_accuracy"][0][0] == 0.5
    assert len(doc["series"][best["id"]]["val_accuracy"]) == 2 * EPOCHS
