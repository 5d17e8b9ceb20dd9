"""``trainyard train`` recipe options: --mosaic / --mosaic-off (augment panel) and --ema reach
the job's spec (queued, not run); an out-of-range value is refused in one line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from trainyard.cli.main import app
from trainyard.core.files import read_json
from trainyard.jobs.context import open_context


def queue(settings, cli_env, *args):
    ctx = open_context(settings)
    dataset = ctx.manager.create("dataset", "d", {}, needs={"pool": "dataset"})  # queued is enough
    result = CliRunner().invoke(app, ["train", "--dataset", dataset.id, "--network", "lenet", "--submit",
                                      "--json", *args], env=cli_env)
    return ctx, result


def test_mosaic_and_ema_reach_the_spec(settings, cli_env):
    ctx, result = queue(settings, cli_env, "--mosaic", "0.5", "--mosaic-off", "20", "--ema", "0.999",
                        "--flip", "lr")
    assert result.exit_code == 0, result.output
    spec = read_json(ctx.manager.folder(json.loads(result.stdout)["jobs"][0]["id"]).spec)
    assert spec["ema"] == 0.999
    assert (spec["augment"]["mosaic"], spec["augment"]["mosaic_off_percent"], spec["augment"]["flip"]) == \
        (0.5, 20.0, "lr")


def test_an_ema_decay_of_one_is_refused(settings, cli_env):
    _, result = queue(settings, cli_env, "--ema", "1")
    assert result.exit_code == 2 and "ema" in result.output
