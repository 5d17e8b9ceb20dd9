"""`trainyard import` and the server's import check network.py with a warm checker, never a torch
start of their own where one is warm, and the command says what the wait is (issue 31, point 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from tests.inference.deploy_helpers import make_checkpoint_job
from trainyard.artifact.checkpoint import checkpoint_for_epoch, load_checkpoint
from trainyard.artifact.network import create_model
from trainyard.cli.main import app as cli
from trainyard.inference.export import export_model
from trainyard.jobs.kinds.imported import import_model_archive
from trainyard.networks import cache as network_cache
from trainyard.networks import network_source
from trainyard.networks.isolated import CHECKER


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, Path]:
    """LeNet's archive, and one whose network.py is LeNet's edited by hand (a custom network)."""
    folder = tmp_path_factory.mktemp("archives")
    standard = export_model(make_checkpoint_job(folder / "std"), None, folder / "lenet.tar.gz").path
    job = make_checkpoint_job(folder / "custom")
    path = checkpoint_for_epoch(job)
    checkpoint = load_checkpoint(path)
    checkpoint.update(network=None, network_source=network_source("lenet") + "\n# edited by hand\n")
    torch.save(checkpoint, path)
    return {"standard": standard, "custom": export_model(job, None, folder / "custom.tar.gz").path}


def lenet_state() -> dict[str, list[int]]:
    """What a check of the archives' network answers: the made model's 4 classes, 3 x 28 x 28."""
    return {name: list(t.shape) for name, t in create_model("lenet", None, 4, 3, 28).state_dict().items()}


def env_of(settings, port: int) -> dict[str, str]:
    return {"TRAINYARD_HOME": str(settings.home), "TRAINYARD_DATA_ROOTS": str(settings.data_roots[0]),
            "TRAINYARD_AUTH_TOKEN": "", "TRAINYARD_PORT": str(port)}


def test_cli_import_asks_the_running_servers_checker(settings, archives, monkeypatch):
    """network.py goes to the server's warm checker (cli/remote_check.py's ask_server, whose HTTP
    side tests/cli/test_cli_remote_check.py covers): the command starts no checker of its own."""
    from trainyard.cli import remote_check

    asked: list[dict] = []

    def server(settings, say, request):
        asked.append(request)
        return {"ok": True, "layers": [], "params": 1, "state": lenet_state()}

    def no_local_checker(*args, **kwargs):
        pytest.fail("the running server's checker answers: no checker starts here")

    monkeypatch.setattr(remote_check, "server_running", lambda settings: True)
    monkeypatch.setattr(remote_check, "ask_server", server)
    monkeypatch.setattr(network_cache, "check_network_isolated", no_local_checker)
    monkeypatch.setattr(network_cache, "ask_first", None)
    result = CliRunner().invoke(cli, ["import", str(archives["custom"]), "--json"], env=env_of(settings, 9))
    assert result.exit_code == 0, result.output
    assert [r["source"].endswith("# edited by hand\n") for r in asked] == [True]
    assert "the running server checks its network" in result.stderr


def test_cli_import_without_a_server_says_what_it_waits_for(settings, archives, monkeypatch, tmp_path):
    monkeypatch.setattr(network_cache, "ask_first", None)
    monkeypatch.setattr(CHECKER, "kept_warm", False)
    before = CHECKER._proc  # an earlier test of the session may have started it
    result = CliRunner().invoke(cli, ["import", str(archives["standard"]), "--json"], env=env_of(settings, 9))
    assert result.exit_code == 0, result.output
    said = result.stderr.splitlines()[0]
    assert said.startswith(f"importing {archives['standard'].name}: no `trainyard serve` runs") and "torch" in said
    assert CHECKER._proc is before  # a standard network is built here: no checker started for it


def test_the_servers_import_checks_a_standard_network_with_its_warm_checker(ctx, archives, monkeypatch):
    asked: list[tuple] = []

    def checker(source, num_classes, in_channels, image_size, timeout=None, **kw):
        asked.append((source, kw["network"], num_classes, in_channels, image_size))
        return {"ok": True, "layers": [], "params": 1, "state": lenet_state()}

    monkeypatch.setattr(network_cache, "check_network_isolated", checker)
    monkeypatch.setattr(network_cache, "ask_first", None)
    monkeypatch.setattr(network_cache, "_memory", type(network_cache._memory)())  # no answer from earlier tests
    monkeypatch.setattr(CHECKER, "kept_warm", True)  # as `serve` keeps it (its start-up warms it)
    job = import_model_archive(ctx, archives["standard"], "warm")
    assert job.status == "done" and asked == [(None, "lenet", 4, 3, 28)]
    # The answer is kept: the next import of the same network asks no checker at all.
    import_model_archive(ctx, archives["standard"], "again")
    assert len(asked) == 1
