"""Dataset jobs from user input: lists cannot reach images outside the data roots."""

import pytest

from tests.conftest import make_image_folder
from trainyard.datasets.spec import DatasetSpec
from trainyard.jobs.kinds.dataset import create_dataset_job
from trainyard.jobs.views.documents import job_detail


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # about roots, not the store
def test_a_list_naming_images_outside_the_roots_skips_them(ctx, settings, tmp_path):
    inside = make_image_folder(settings.data_roots[0] / "inside", {"cat": 4, "dog": 4})
    outside = make_image_folder(tmp_path / "outside", {"cat": 2, "dog": 2})
    labels = settings.data_roots[0] / "labels.txt"
    labels.write_text("cat\ndog\n")
    lines = [f"{p} {0 if p.parent.name == 'cat' else 1}" for p in sorted(inside.rglob("*.jpg"))]
    lines += [f"{p} 0" for p in sorted(outside.rglob("*.jpg"))]
    listing = settings.data_roots[0] / "train.txt"
    listing.write_text("\n".join(lines) + "\n")
    spec = DatasetSpec(name="listed", train_list=str(listing), labels_file=str(labels),
                       width=16, height=16, data_roots=["/"])  # a user's own roots are ignored
    job = ctx.manager.run_foreground(create_dataset_job(ctx, spec, foreground=True).id)
    detail = job_detail(ctx.manager, job).as_json()
    assert job.status == "done"
    assert sum(sum(c.values()) for c in detail["counts"].values()) == 8
    skipped = {s["path"] for s in detail["skipped"]}
    assert {str(p) for p in outside.rglob("*.jpg")} <= skipped
