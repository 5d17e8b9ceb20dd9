"""The model page's settings, timeline and actions (web/model_page.py), from plain job documents."""

from __future__ import annotations

from trainyard.web.model_page import actions, settings_groups, timeline


def test_settings_are_grouped_with_labels_and_no_dict_reprs():
    spec = {"version": 1, "name": "m", "dataset_id": "d1", "network": "lenet", "epochs": 30, "batch_size": None,
            "lr": {"policy": "step", "base_lr": 0.01}, "augment": {"flip": "lr"}, "precision": "auto",
            "imported": {"archive": "a.tar.gz", "job": {"id": "j1", "name": "old"}, "versions": {"torch": "2.5"},
                         "history": [{"epoch": 1, "loss": 0.5}]}}
    groups = {g["name"]: dict(g["rows"]) for g in settings_groups(spec, {"Hardware": [("Devices", "GPU 0")]})}
    assert list(groups) == ["Data", "Network", "Solver", "Augmentation", "Hardware"]
    assert groups["Solver"]["Base learning rate"] == "0.01" and groups["Solver"]["Learning-rate policy"] == "step"
    assert groups["Solver"]["Batch size (per process)"] == "network default"
    assert groups["Network"]["Imported · Job · Name"] == "old"
    assert groups["Network"]["Imported · History"] == "epoch 1, loss 0.5"
    assert groups["Hardware"] == {"Precision": "auto", "Devices": "GPU 0"}
    assert not any("{" in text for rows in groups.values() for text in rows.values())


def test_timeline_durations_and_the_last_status_of_an_ended_job():
    history = [{"status": "queued", "time": 100.0}, {"status": "running", "time": 103.0},
               {"status": "done", "time": 163.0}]
    steps = timeline(history, finished_at=163.0, now=500.0)
    assert [s["duration"] for s in steps] == [3.0, 60.0, None]
    assert timeline(history[:2], finished_at=None, now=110.0)[-1]["duration"] == 7.0  # running: so far


def test_only_actions_that_can_work_are_offered():
    assert actions({"status": "failed", "snapshots": []}) == {"classify": False, "resume": False, "clone_first": True}
    assert actions({"status": "failed", "snapshots": [2]}) == {"classify": True, "resume": True, "clone_first": True}
    assert actions({"status": "aborted", "snapshots": []})["resume"] is True
    assert actions({"status": "done", "snapshots": [3]}) == {"classify": True, "resume": False, "clone_first": False}


def test_an_aborted_jobs_timeline_ends_with_its_abort():
    """Issue 22: the timeline of an aborted job ended at "running", still counting."""
    history = [{"status": "queued", "time": 100.0}, {"status": "running", "time": 103.0}]
    steps = timeline(history, finished_at=150.0, now=500.0, status="aborted")
    assert [s["status"] for s in steps] == ["queued", "running", "aborted"]
    assert [s["duration"] for s in steps] == [3.0, 47.0, None]  # nothing counts on after the end
    whole = [*history, {"status": "aborted", "time": 150.0}]
    assert [s["status"] for s in timeline(whole, finished_at=150.0, status="aborted")] == ["queued", "running",
                                                                                             "aborted"]


def test_settings_show_what_the_lr_policy_reads_and_the_seed_used(tmp_path):
    from trainyard.web.model_page import seed_used

    spec = {"lr": {"policy": "fixed", "base_lr": 0.01, "step_percent": 33.0, "gamma": 0.1, "power": 0.5,
                   "steps_percent": [50, 85], "warmup_percent": 0.0, "warmup_start_factor": 0.1}, "seed": None}
    (tmp_path / "log.txt").write_text("2026-12-01 08:36:18 [info] training lenet (61,706 parameters) on cpu "
                                      "(fp32); 30 training images in 1 batches of 64, 10 iterations, base LR "
                                      "0.01, seed 1234\nepoch 1 done\n")
    assert seed_used(tmp_path) == 1234 and seed_used(tmp_path / "none") is None
    solver = {g["name"]: dict(g["rows"]) for g in settings_groups(spec, seed=seed_used(tmp_path))}["Solver"]
    assert solver == {"Learning-rate policy": "fixed", "Base learning rate": "0.01",
                      "Warm-up (% of training)": "0", "Random seed": "1234 (drawn at random)"}
    step = {**spec, "lr": {**spec["lr"], "policy": "step"}, "seed": 7}
    rows = {g["name"]: dict(g["rows"]) for g in settings_groups(step, seed=7)}["Solver"]
    assert rows["Step size (% of training)"] == "33" and rows["Gamma"] == "0.1" and "Power" not in rows
    assert rows["Random seed"] == "7"


def test_lr_settings_are_all_shown_when_the_policy_is_not_known():
    """The policy is read through the model's spec class: one this version does not know, or
    none given, hides nothing rather than guessing."""
    lr = {"base_lr": 0.01, "gamma": 0.5, "power": 2.0}
    for spec in ({"lr": {**lr, "policy": "cosine-of-the-future"}}, {"lr": lr}):
        solver = {g["name"]: dict(g["rows"]) for g in settings_groups(spec)}["Solver"]
        assert solver["Gamma"] == "0.5" and solver["Power"] == "2"
    solver = {g["name"]: dict(g["rows"]) for g in settings_groups({"lr": {**lr, "policy": "exp"}})}["Solver"]
    assert solver["Gamma"] == "0.5" and "Power" not in solver  # exp reads gamma, not power
