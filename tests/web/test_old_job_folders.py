"""A home from before the split (issue 28 point 3): a job whose files all sit in ``jobs/<id>/``
is still read where it is (its log, metrics, checkpoints, classify, its sandbox), while a new
job beside it is made split, with its work folder the only one its sandbox writes."""

from __future__ import annotations

import io
import json

from PIL import Image

from tests.inference.deploy_helpers import make_checkpoint_job
from trainyard.core.paths import JobFolder
from trainyard.core.status import Status
from trainyard.jobs.runs.sandbox import recorded_policy
from trainyard.jobs.store import confinement as confinement_record
from trainyard.jobs.store.store import Job


def old_model(ctx, job_id: str = "old-model") -> JobFolder:
    """A done model job written as trainyard wrote them before the split."""
    path = ctx.settings.jobs_dir / job_id
    path.mkdir(parents=True)
    (path / "spec.json").write_text(json.dumps({"id": job_id, "kind": "model", "name": "old", "network": "lenet",
                                                "epochs": 1}))
    events = [{"type": "metric", "epoch": 1, "name": "val_accuracy", "value": 50.0},
              {"type": "checkpoint", "epoch": 1}, {"type": "status", "status": "done"}]
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (path / "log.txt").write_text("2025-01-01 00:00:00 [info] trained before the split\n")
    (path / "output.txt").write_text("its old output\n")
    make_checkpoint_job(path)
    ctx.store.add_job(Job(id=job_id, kind="model", name="old", status=Status.DONE, parent_id=None,
                          needs={"pool": "cpu"}, summary={"epoch": 1}))
    # recorded, as the last round's jobs were (one older still counts as user code: left so)
    confinement_record.record(ctx.store, job_id, confinement_record.Confinement(user_code=False))
    return JobFolder(path)


def test_a_job_made_before_the_split_is_read_where_it_is(settings, client_for):
    with client_for(settings, run_scheduler=False) as client:
        ctx = client.app.state.ctx
        old = old_model(ctx)
        assert not old.split and old.checkpoints == old.path / "checkpoints"
        log = client.get("/api/jobs/old-model/log").text
        assert "trained before the split" in log and "its old output" in log
        doc = client.get("/api/models/old-model").json()
        assert doc["snapshots"] == [1], doc
        image = io.BytesIO()
        Image.new("RGB", (28, 28), (200, 30, 30)).save(image, "PNG")
        answer = client.post("/api/models/old-model/classify",
                             files={"images": ("r.png", image.getvalue(), "image/png")})
        assert answer.status_code == 200, answer.text
        assert client.post("/api/jobs/old-model/resume").status_code == 200  # queued again, in its folder
        assert "queued again" in old.server_log.read_text() and not (old.path / "work").exists()
        # a custom job of then runs confined writing its one folder, as it did
        policy = recorded_policy(confinement_record.Confinement(user_code=True), old.path, [])
        assert policy.write[0] == str(old.path)

        new = ctx.manager.create("model", "new", {"name": "new", "network": "lenet"}, needs={"pool": "cpu"})
        folder = ctx.manager.folder(new.id)
        assert folder.split and sorted(p.name for p in folder.path.iterdir()) == ["spec.json", "work"]
        policy = recorded_policy(confinement_record.Confinement(user_code=True), folder.path, [])
        assert policy.write[0] == str(folder.work) and str(folder.spec) in policy.read
        assert str(folder.path) not in policy.write
