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
