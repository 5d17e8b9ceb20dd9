"""Without an epoch, inference reads a model's best snapshot by its task's validation metric, not
its last (issue 46, point 4: a run's accuracy peaked at epoch 7 and ended lower); ``last`` asks
for the latest, a number for that epoch; the CLI says which it took."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.core.events import EventWriter
from trainyard.core.paths import JobFolder, checkpoint_name
from trainyard.core.status import Status
from trainyard.inference.snapshots import LAST, NotFound, choose_snapshot, model_checkpoint, parse_epoch


def fake_model(job_dir, scores: dict[float, float], metric="val_accuracy", unvalidated=()):
    folder = JobFolder(job_dir)
    folder.checkpoints.mkdir(parents=True)
    with EventWriter(folder.work) as events:
        for epoch, score in scores.items():
            events.emit("metric", epoch=epoch, name=metric, value=score)
    for epoch in [*scores, *unvalidated]:
        (folder.checkpoints / checkpoint_name(epoch)).write_bytes(b"")


def test_the_best_snapshot_by_default_the_latest_on_request(tmp_path):
    fake_model(tmp_path, {1: 40.0, 2: 49.0, 3: 46.0, 4: 49.0, 5: 44.0})
    best = choose_snapshot(tmp_path)
    assert best.epoch == 4 and "best by validation accuracy" in best.why  # a tie: the later one
    assert "--epoch last: epoch 5" in best.why
    assert model_checkpoint(tmp_path, LAST)[0] == 5 and model_checkpoint(tmp_path, 2.0)[0] == 2
    with pytest.raises(NotFound):
        model_checkpoint(tmp_path, 9.0)
    assert (parse_epoch(None), parse_epoch("best"), parse_epoch("last"), parse_epoch("2.5")) == (None, None, LAST, 2.5)


def test_a_detector_by_map_and_a_model_never_validated_by_its_latest(tmp_path):
    fake_model(tmp_path / "boxes", {1: 0.2, 2: 0.5, 3: 0.3}, metric="val_map50", unvalidated=[3.5])
    assert choose_snapshot(tmp_path / "boxes").epoch == 2
    fake_model(tmp_path / "plain", {}, unvalidated=[1, 2])
    assert choose_snapshot(tmp_path / "plain").epoch == 2


def test_the_cli_says_which_snapshot_it_took(settings, cli_env):
    from trainyard.jobs.context import open_context

    ctx = open_context(settings)
    job = ctx.manager.create("model", "m", {}, needs={"pool": "cpu"})
    ctx.store.update_job(job.id, status=Status.DONE)
    fake_model(ctx.manager.folder(job.id).path, {1: 30.0, 2: 60.0, 3: 50.0})
    out = settings.home / "m.tar.gz"
    result = CliRunner().invoke(app, ["export", job.id, "-o", str(out)], env=cli_env)
    said = " ".join(result.stderr.split())
    assert f"model {job.id}: snapshot of epoch 2, the best by validation accuracy (--epoch last: epoch 3)" in said
    result = CliRunner().invoke(app, ["export", job.id, "-o", str(out), "--epoch", "soon"], env=cli_env)
    assert result.exit_code == 2 and "should be an epoch number, best or last" in result.stderr
