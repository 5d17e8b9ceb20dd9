"""The CLI answers at once (issue 22): help and refusals that need no computation import no
command module's heavy dependencies (the job store, pydantic, typer's rich help, torch, timm).

Each case runs in a fresh interpreter and reports the modules it loaded; no timings here (the
ratios are bench/app/cli.py's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from trainyard.cli.lazy import Pending
from trainyard.cli.main import app
from trainyard.networks import timm_networks

HEAVY = ("sqlalchemy", "pydantic", "pydantic_settings", "typer.rich_utils", "rich.markdown", "torch", "timm",
         "trainyard.jobs.store.store", "trainyard.settings")
# Every command docs/interface.md fixes, and the groups' verbs.
COMMANDS = ("serve", "dataset", "train", "jobs", "classify", "evaluate", "export", "import", "system", "weights")
VERBS = {"dataset": {"create", "list", "show", "append"},
         "jobs": {"list", "show", "abort", "delete", "resume"},  # compare, tag, note: not built yet
         "weights": {"list", "pull", "remove", "import"}}

RUN = """
import json, sys
from trainyard.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "heavy": [m for m in HEAVY if m in sys.modules]}), file=sys.stderr)
"""


def run(args: list[str], tmp_path: Path, **env: str) -> tuple[dict, str]:
    environ = {**os.environ, "TRAINYARD_HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
               "COLUMNS": "80", **env}
    done = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{RUN}", *args], env=environ,
                          capture_output=True, text=True, timeout=120)
    *text, last = done.stderr.strip().splitlines()
    return json.loads(last), done.stdout + "\n".join(text)


def test_help_lists_every_command_with_its_own_short_help():
    group = typer.main.get_group(app)
    assert set(COMMANDS) <= set(group.list_commands(None))  # type: ignore[arg-type]
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for name in COMMANDS:
        pending = group.commands[name]
        real = group.loaded(name)
        if isinstance(pending, Pending):  # what --help lists is what the command says of itself
            assert pending.short_help == " ".join((real.help or "").split("\n\n")[0].split()), name
        assert f"  {name} " in result.output
        if name in VERBS:
            assert VERBS[name] <= set(real.commands), name  # type: ignore[attr-defined]


def test_help_and_refusals_load_nothing_heavy(tmp_path):
    for args in (["--help"], ["train", "--help"], ["dataset", "create", "--help"], ["jobs", "--help"],
                 ["weights", "list", "--help"], ["classify", "--help"], ["serve", "--help"]):
        answer, output = run(args, tmp_path)
        assert answer == {"code": 0, "heavy": []}, (args, output)
        assert "Usage:" in output
    answer, output = run(["trian"], tmp_path)
    assert answer == {"code": 2, "heavy": []} and "No such command 'trian'" in output and "'train'" in output
    answer, output = run(["dataset", "create", "--name", "x", "--channels", "three"], tmp_path)
    assert answer == {"code": 2, "heavy": []} and "'three' is not a valid integer" in output


def test_mistyped_networks_are_refused_from_names_alone(tmp_path):
    cached = timm_networks.names_file()
    assert cached is not None  # timm is installed here
    # timm's names as the cache holds them, for the installed version: timm itself is never asked
    names = tmp_path / "cache" / cached.relative_to(cached.parents[1])
    names.parent.mkdir(parents=True)
    names.write_text("resnet10t\nresnet18\nvit_tiny_patch16_224\n")
    answer, output = run(["train", "--dataset", "nosuch", "--network", "timm:resnet10tt"], tmp_path)
    assert answer == {"code": 2, "heavy": []} and "did you mean timm:resnet10t" in output
    answer, output = run(["train", "--dataset", "nosuch", "--network", "lenet,resnt18"], tmp_path)
    assert answer == {"code": 2, "heavy": []} and "resnt18" in output and "resnet18" in output


def test_train_help_shows_every_option_whole_at_80_columns():
    result = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    words = set(result.output.replace("/", " ").split())
    train = typer.main.get_group(app).loaded("train")
    for param in train.params:
        for option in param.opts:
            assert option in words, option
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_values_are_converted_and_bad_ones_refused():
    """The plain converter (cli/plain_params.py) gives commands the types they declare."""
    seen = {}
    probe = typer.Typer()

    @probe.command()
    def main(n: int = typer.Option(1), x: float = typer.Option(0.5), p: Path = typer.Option(Path(".")),
             flag: bool = typer.Option(False, "--flag"), files: list[Path] = typer.Argument(None)) -> None:
        seen.update(n=n, x=x, p=p, flag=flag, files=files)

    from trainyard.cli import plain_params

    plain_params.install()
    assert CliRunner().invoke(probe, ["--n", "3", "--x", "2", "--p", "a/b", "--flag", "f1", "f2"]).exit_code == 0
    assert seen == {"n": 3, "x": 2.0, "p": Path("a/b"), "flag": True, "files": [Path("f1"), Path("f2")]}
    assert type(seen["x"]) is float
    bad = CliRunner().invoke(probe, ["--x", "fast"])
    assert bad.exit_code == 2 and "'fast' is not a valid number" in bad.output
