"""A user's weights import keeps only the network's tensors (the rest dropped, and said so) and
reads the file a tensor at a time instead of holding it in memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.networks import create_network
from trainyard.weights.store import WeightsStore

EXTRA_MB = 256


def lenet_state() -> dict[str, torch.Tensor]:
    return create_network("lenet", 10, 1, 28).state_dict()


def stored_names(store: WeightsStore, name: str) -> set[str]:
    path, _ = store.weights_path(name)
    with safe_open(str(path), framework="pt") as handle:
        return set(handle.keys())


@pytest.mark.parametrize("suffix", [".pth", ".safetensors"])
def test_extra_tensors_are_dropped_and_listed(tmp_path, suffix):
    state = lenet_state()
    extras = {"optimizer.momentum": torch.ones(3), "payload": torch.arange(1000, dtype=torch.uint8)}
    path = tmp_path / f"w{suffix}"
    if suffix == ".pth":
        torch.save({**state, **extras}, path)
    else:
        save_file({**state, **extras}, str(path))
    store = WeightsStore(tmp_path / "weights")
    row = store.import_file("mine", path, "lenet")
    assert row["dropped"] == {"count": 2, "names": ["optimizer.momentum", "payload"]}
    assert stored_names(store, "mine") == set(state)
    kept = store.weights_path("mine")[0]
    with safe_open(str(kept), framework="pt") as handle:  # the same numbers, in a valid file
        assert all(torch.equal(handle.get_tensor(k), v) for k, v in state.items())


def test_a_clean_file_drops_nothing_and_cli_says_what_it_dropped(tmp_path, cli_env):
    path = tmp_path / "w.pth"
    torch.save(lenet_state(), path)
    assert "dropped" not in WeightsStore(tmp_path / "weights").import_file("clean", path, "lenet")
    torch.save({**lenet_state(), "secret": torch.zeros(2)}, path)
    done = CliRunner().invoke(app, ["weights", "import", "extra", str(path), "--network", "lenet"], env=cli_env)
    assert done.exit_code == 0 and "dropped 1 tensors that are not lenet's: secret" in done.output


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".pth", ".safetensors"])
def test_an_import_never_holds_the_file_in_memory(tmp_path, suffix):
    """A file with a 256 MiB tensor beside the network's: importing it must not raise the
    process's peak memory by anything like that (it did by twice the file's size)."""
    path = tmp_path / f"big{suffix}"
    big = {**lenet_state(), "extra": torch.zeros(EXTRA_MB * 2**18)}  # float32: 256 MiB
    torch.save(big, path) if suffix == ".pth" else save_file(big, str(path))
    del big
    script = textwrap.dedent("""
        import json, resource, sys
        from trainyard.weights.store import WeightsStore
        from trainyard.weights import fit
        fit.network_layout("lenet", 28)  # the network's own building is not the file's cost
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        row = WeightsStore(sys.argv[2]).import_file("big", sys.argv[1], "lenet")
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"grew_mb": (after - before) / 1024, "dropped": row["dropped"]["names"]}))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path / "weights")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["dropped"] == ["extra"]
    assert found["grew_mb"] < EXTRA_MB / 4, found
