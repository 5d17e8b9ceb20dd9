"""``trainyard classify`` and ``trainyard evaluate`` on the shared trained model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.trained_model import colour_image
from trainyard.cli.main import app


@pytest.fixture(scope="module")
def images(trained, tmp_path_factory):
    """One fresh image per class, named after its class, and a file that is no image."""
    folder = tmp_path_factory.mktemp("cli-images")
    paths = []
    for name in trained.classes:
        colour_image(name, 30).save(folder / f"{name}.png")
        paths.append(folder / f"{name}.png")
    (folder / "readme.txt").write_text("no image here")
    return paths, folder / "readme.txt"


def run(trained, *args: str):
    return CliRunner().invoke(app, list(args), env=trained.env())


def test_classify_json_is_the_api_shape_and_right(trained, images):
    paths, _ = images
    result = run(trained, "classify", trained.model_id, *map(str, paths), "--top", "2", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["image"] for r in doc["results"]] == [str(p) for p in paths]
    for r, name in zip(doc["results"], trained.classes):
        assert set(r) == {"image", "predictions"} and len(r["predictions"]) == 2
        assert r["predictions"][0][0] == name and 0 < r["predictions"][0][1] <= 1


def test_classify_text_an_epoch_and_a_checkpoint_file(trained, images):
    paths, _ = images
    result = run(trained, "classify", trained.model_id, str(paths[2]), "--epoch", "1")
    assert result.exit_code == 0 and result.stdout.splitlines()[0] == str(paths[2])
    assert result.stdout.splitlines()[1].strip().endswith("red")
    checkpoint = trained.ctx.manager.folder(trained.model_id).checkpoints / "epoch-0003.pt"
    direct = run(trained, "classify", str(checkpoint), str(paths[0]), "--json")
    assert json.loads(direct.stdout)["results"][0]["predictions"][0][0] == "dark"


def test_classify_bad_input(trained, images):
    paths, text_file = images
    mixed = run(trained, "classify", trained.model_id, str(paths[0]), str(text_file), "--json")
    assert mixed.exit_code == 1
    results = json.loads(mixed.stdout)["results"]
    assert results[0]["predictions"][0][0] == "dark"
    assert results[1]["predictions"] == [] and "not an image" in results[1]["error"]
    epoch = run(trained, "classify", trained.model_id, str(paths[0]), "--epoch", "8")
    assert epoch.exit_code == 2 and "no checkpoint for epoch 8" in epoch.output
    unknown = run(trained, "classify", "nope", str(paths[0]))
    assert unknown.exit_code == 2 and "no model with id 'nope'" in unknown.output


def test_evaluate_json_and_missing_split(trained):
    result = run(trained, "evaluate", trained.model_id, "--split", "val", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["split"] == "val" and doc["epoch"] == 3 and doc["images"] == 18
    assert doc["accuracy"] == 1.0 and doc["confusion"] == [[6, 0, 0], [0, 6, 0], [0, 0, 6]]
    assert [r["class"] for r in doc["per_class"]] == trained.classes
    missing = run(trained, "evaluate", trained.model_id, "--split", "test")
    assert missing.exit_code == 2 and "no test split" in missing.output


CLASSIFY_PROBE = """
import sys
from trainyard.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    print("TORCH" if "torch" in sys.modules else "LIGHT", file=sys.stderr)
    raise
"""


def test_classify_asks_a_running_server_and_answers_the_same(trained, images):
    """With a server up and no cached export, the CLI uploads the images and never imports torch;
    with the export cached, it classifies by itself, again without torch."""
    import os
    import subprocess
    import sys

    from tests.live_server import serving
    from trainyard.core import server_token
    from trainyard.inference import ort_runtime
    from trainyard.inference.snapshots import model_checkpoint
    from trainyard.web.app import create_app

    paths, text_file = images
    args = ["classify", trained.model_id, *map(str, paths), "--top", "3", "--json"]
    local = run(trained, *args)
    snapshot = model_checkpoint(trained.ctx.manager.folder(trained.model_id).path)[1]
    for cached in (ort_runtime.onnx_path(snapshot), ort_runtime.inputs_path(snapshot)):
        cached.unlink(missing_ok=True)  # classifying here would now import torch: LIGHT means the server answered
    app = create_app(trained.settings, run_scheduler=False)
    with serving(app) as url:
        env = {**os.environ, **trained.env(), "TRAINYARD_PORT": url.rsplit(":", 1)[1]}
        # The server refuses a caller without its credential: the CLI reads it from the file a
        # served app writes for its home (core/server_token.py); without it, the CLI classifies here.
        server_token.write(trained.settings.home, app.state.auth_token)

        def cli(*argv: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-c", CLASSIFY_PROBE, *argv], env=env, capture_output=True,
                                  text=True, timeout=300)

        served = cli(*args)
        assert served.returncode == 0, served.stderr
        assert served.stderr.strip().splitlines()[-1] == "LIGHT"
        got, expected = json.loads(served.stdout)["results"], json.loads(local.stdout)["results"]
        assert [r["image"] for r in got] == [r["image"] for r in expected]
        for mine, theirs in zip(got, expected):
            assert [label for label, _ in mine["predictions"]] == [label for label, _ in theirs["predictions"]]
            assert [c for _, c in mine["predictions"]] == pytest.approx([c for _, c in theirs["predictions"]], abs=1e-4)
        # An image the server refuses: the CLI classifies by itself, with the usual per-image error.
        mixed = cli("classify", trained.model_id, str(paths[0]), str(text_file), "--json")
        assert mixed.returncode == 1
        results = json.loads(mixed.stdout)["results"]
        assert results[0]["predictions"][0][0] == "dark" and "not an image" in results[1]["error"]
    server_token.remove(trained.settings.home, app.state.auth_token)
    assert ort_runtime.is_cached(snapshot)  # the server exported the snapshot once, beside it
    here = cli(*args)  # the server is gone; the cached export answers in this process
    assert here.returncode == 0 and here.stderr.strip().splitlines()[-1] == "LIGHT"
    assert json.loads(here.stdout)["results"] == json.loads(local.stdout)["results"]
