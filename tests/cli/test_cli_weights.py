"""``trainyard weights list | pull | import | remove`` with --json and their errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.weights.fixtures import HUB_PATH, TIMM_ENTRY, safetensors_bytes
from trainyard.cli.main import app


def run(env, *args):
    return CliRunner().invoke(app, ["weights", *args], env=env)


def test_pull_list_and_remove(cli_env, file_server, hub_file):
    file_server.files[HUB_PATH] = hub_file
    env = {**cli_env, "HF_ENDPOINT": file_server.url}
    pulled = run(env, "pull", "timm:test_resnet.imagenet", "--json")
    assert pulled.exit_code == 0, pulled.output
    assert json.loads(pulled.stdout)["name"] == TIMM_ENTRY
    listed = json.loads(run(env, "list", "--present", "--json").stdout)["weights"]
    assert [row["name"] for row in listed] == [TIMM_ENTRY]
    text = run(env, "list", "test_resnet")
    assert f"* {TIMM_ENTRY}" in text.stdout
    assert run(env, "remove", TIMM_ENTRY).exit_code == 0
    assert json.loads(run(env, "list", "--present", "--json").stdout)["weights"] == []


def test_import_errors_are_one_line_and_exit_2(cli_env, tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(safetensors_bytes("timm:test_resnet", num_classes=3))
    wrong = run(cli_env, "import", "mine", str(path), "--network", "resnet18")
    assert wrong.exit_code == 2 and "does not fit network resnet18" in wrong.output
    missing = run(cli_env, "import", "mine", str(path))
    assert missing.exit_code == 2 and "--network" in missing.output
    made = run(cli_env, "import", "mine", str(path), "--network", "timm:test_resnet", "--json")
    assert made.exit_code == 0 and json.loads(made.stdout)["source"] == "user"


def test_list_shows_mine_first_and_takes_mine_source_and_search(cli_env, tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(safetensors_bytes("timm:test_resnet", num_classes=3))
    assert run(cli_env, "import", "zz-mine", str(path), "--network", "timm:test_resnet").exit_code == 0
    listed = run(cli_env, "list")
    assert listed.exit_code == 0 and listed.stdout.splitlines()[0].split()[:2] == ["*", "zz-mine"]
    for args in (["--mine"], ["--source", "mine"]):
        rows = json.loads(run(cli_env, "list", *args, "--json").stdout)["weights"]
        assert [r["name"] for r in rows] == ["zz-mine"], args
    found = json.loads(run(cli_env, "list", "--search", "vgg16 features", "--json").stdout)["weights"]
    assert [r["name"] for r in found] == ["vgg16.imagenet1k_features"]
    assert "nan" not in run(cli_env, "list", "--search", "vgg16").stdout
    assert "224x224" in run(cli_env, "list", "--search", "resnet18.imagenet1k_v1").stdout
    bad = run(cli_env, "list", "--source", "hub")
    assert bad.exit_code == 2 and "torchvision, timm or mine" in bad.output
    clash = run(cli_env, "list", "--mine", "--source", "timm")
    assert clash.exit_code == 2


def test_list_shows_your_own_and_pulled_weights_and_says_how_to_find_the_rest(cli_env, tmp_path):
    """Not 1,774 published entries by default (issue 31.9); --all and --json still give them all."""
    path = tmp_path / "w.safetensors"
    path.write_bytes(safetensors_bytes("timm:test_resnet", num_classes=3))
    assert run(cli_env, "import", "zz-mine", str(path), "--network", "timm:test_resnet").exit_code == 0
    listed = run(cli_env, "list")
    assert listed.exit_code == 0 and [line.split()[1] for line in listed.stdout.splitlines()] == ["zz-mine"]
    assert "--all" in listed.stderr and "trainyard weights list resnet" in listed.stderr
    everything = run(cli_env, "list", "--all")
    assert len(everything.stdout.splitlines()) > 1000 and "--all" not in everything.stderr
    assert len(json.loads(run(cli_env, "list", "--json").stdout)["weights"]) > 1000
    assert "resnet18.imagenet1k_v1" in run(cli_env, "list", "resnet18").stdout


def test_a_wrong_hash_is_said_before_torch_is_imported(cli_env, tmp_path, monkeypatch):
    """Issue 46, point 7: 21 s to say a 2 MB file has the wrong SHA-256, most of it importing torch
    to look the entry up. With the catalogue's cache file written (any listing writes it), the
    hash is checked and refused with no torch in the process."""
    import os
    import subprocess
    import sys
    from dataclasses import replace

    from trainyard.weights import catalogue, catalogue_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    published = replace(catalogue.find_entry("resnet18.imagenet"), sha256="ab" * 32)
    for source, entries in (("torchvision", (published,)), ("timm", ())):
        catalogue_cache.cached_entries(source, lambda entries=entries: entries, catalogue.WeightsEntry)
    damaged = tmp_path / "resnet18.pth"
    damaged.write_bytes(b"not the published file")
    probe = ("import atexit, sys; atexit.register(lambda: print('torch loaded:', 'torch' in sys.modules, "
             "file=sys.stderr)); from trainyard.cli.main import app; app()")
    result = subprocess.run([sys.executable, "-c", probe, "weights", "import", published.name, str(damaged)],
                            env={**os.environ, **cli_env, "XDG_CACHE_HOME": str(tmp_path / "cache")},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "has SHA-256" in result.stderr, result.stderr
    assert "torch loaded: False" in result.stderr


def test_visibility_is_set_at_import_and_changed_by_the_owner_and_audited(cli_env, tmp_path, settings):
    from trainyard.jobs.accounts import audit, users
    from trainyard.jobs.store.store import Store

    settings.ensure_dirs()
    store = Store(settings.db_url)
    users.add_user(store, "admin", "admin")  # the home's first admin: commands run as it
    path = tmp_path / "w.safetensors"
    path.write_bytes(safetensors_bytes("timm:test_resnet", num_classes=3))
    made = run(cli_env, "import", "ours", str(path), "--network", "timm:test_resnet", "--visibility", "team",
               "--json")
    assert made.exit_code == 0, made.output
    assert (json.loads(made.stdout)["owner"], json.loads(made.stdout)["visibility"]) == ("admin", "team")
    private = run(cli_env, "visibility", "ours", "private", "--json")
    assert private.exit_code == 0 and json.loads(private.stdout)["visibility"] == "private"
    wrong = run(cli_env, "visibility", "ours", "public")
    assert wrong.exit_code == 2 and "visibility should be one of private, team" in wrong.output
    actions = [(e.user, e.action, e.target) for e in audit.entries(store).entries]
    assert ("admin", "weights visibility", "ours:private") in actions
    assert ("admin", "import weights", "ours") in actions
