"""Benchmark where users wait outside the loops: start-up, the CLI's classify, classify-many.

One run over a temporary home, every side a fresh process timed end to end (wall clock), and
each row printed as a ratio (issue 14's table):

  dataset create   `trainyard dataset create` against the build alone (build_dataset in-process
                   on the same spec, after its imports)                           aim <= 1.3
                   Two rows: the --images set (500 by default), whose build takes a fraction
                   of a second, so the row is nearly all fixed cost (interpreter, imports,
                   store, job process); and a --dataset-images set (5,000 by default: about
                   a second's build on 2 quiet cores, like the issue's digits-sized set's 1.3 s),
                   where the fixed cost meets a build of the size users wait for. Neither alone
                   tells the whole story: the small row shows the fixed cost, the large one
                   what it weighs against real work.
                   Each side is the best of --rounds runs, interleaved.
  train            `trainyard train --epochs 1` against a minimal script that imports torch and
                   trains the same network on the same number of images          aim <= 1.1
  classify (CLI)   `trainyard classify MODEL <N images> --json`, without a server (first the run
                   that exports the snapshot to ONNX, then one that finds it cached) and with a
                   running server, against the archive's use_archive.py on the same images (with
                   the export cached, the CLI classifies by itself whether a server runs or not)
  classify-many    a classify-many job's images/s, queued to done, against use_archive.py's (a
                   plain onnxruntime loop over the same files, its start-up included), and the
                   peak memory of each, over --images and --dataset-images images: the first
                   row is mostly each side's start-up, the second mostly the loop  aim >= 0.8
  import time      `python -X importtime`: the cumulative import of each light command's module,
                   and whether it pulled in torch

    python bench/app/startup.py [--images 500] [--dataset-images 5000] [--rounds 3] [--network lenet]
                            [--size 28] [--only dataset]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ helpers from a checkout
from tests.conftest import make_image_folder  # noqa: E402
from tests.live_server import free_port, wait_until_up  # noqa: E402

PY = sys.executable
USE_ARCHIVE = str(Path(__file__).resolve().parents[2] / "src/trainyard/examples/classification/use_archive.py")

MINIMAL_TRAIN = """
import sys, time, torch
from trainyard.networks import create_network
n, size, channels, batch = (int(a) for a in sys.argv[1:5])
torch.manual_seed(0)
x, y = torch.rand(n, channels, size, size), torch.randint(0, 2, (n,))
model = create_network(sys.argv[5], 2, channels, size)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for i in range(0, n, batch):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x[i:i + batch]), y[i:i + batch]).backward()
    opt.step()
model.eval()
with torch.no_grad():
    model(x[: batch])
"""

BUILD_ALONE = """
import sys, tempfile, time
from pathlib import Path
from trainyard.core.events import EventWriter
from trainyard.datasets.build import build_dataset
from trainyard.datasets.run import _load_spec
spec = _load_spec(Path(sys.argv[1]))
with tempfile.TemporaryDirectory() as tmp:
    start = time.perf_counter()
    with EventWriter(Path(tmp)) as events:
        build_dataset(spec, Path(tmp), events)
    print(time.perf_counter() - start)
"""


def wall(cmd: list[str], env: dict, **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, **kwargs)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed:\n{done.stderr[-2000:]}")
    return elapsed, done


def trainyard(*args: str) -> list[str]:
    return [PY, "-m", "trainyard.cli.main", *args]


def import_times(env: dict) -> list[tuple[str, float, bool]]:
    """(module, cumulative import seconds, torch imported) of each light entry point."""
    rows = []
    for module in ("trainyard.cli.main", "trainyard.cli.jobs", "trainyard.cli.datasets", "trainyard.cli.train",
                   "trainyard.web.app"):
        done = subprocess.run([PY, "-X", "importtime", "-c", f"import {module}"], env=env, capture_output=True,
                              text=True)
        cumulative = {m.group(2).strip(): int(m.group(1)) for m in
                      re.finditer(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)", done.stderr)}
        rows.append((module, cumulative.get(module, 0) / 1e6, "torch" in cumulative))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=500)
    parser.add_argument("--network", default="lenet")
    parser.add_argument("--size", type=int, default=28, help="the dataset's stored image size")
    parser.add_argument("--dataset-images", type=int, default=5000,
                        help="images of the second, realistic-size dataset create row")
    parser.add_argument("--rounds", type=int, default=3, help="dataset rows: best of this many runs")
    parser.add_argument("--only", choices=["dataset"], help="print only these rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), args)


def run(base: Path, args: argparse.Namespace) -> None:
    env = {**os.environ, "TRAINYARD_HOME": str(base / "home"), "TRAINYARD_DATA_ROOTS": str(base),
           "TRAINYARD_AUTH_TOKEN": "", "TRAINYARD_PORT": str(free_port())}
    env.pop("TRAINYARD_FAKE_GPUS", None)
    folder = make_image_folder(base / "images", {"cat": args.images // 2, "dog": args.images - args.images // 2})
    images = sorted(str(p) for p in folder.rglob("*.jpg"))
    rows = []

    dataset = dataset_row(folder, base, env, args, rows)
    big = args.dataset_images
    more = make_image_folder(base / "more", {"cat": big // 2, "dog": big - big // 2})
    dataset_row(more, base, env, args, rows)
    if args.only == "dataset":
        report(rows, [], len(images))
        return

    train_s, done = wall(trainyard("train", "--dataset", dataset["id"], "--network", args.network, "--epochs", "1",
                                   "--batch-size", "64", "--json"), env)
    model = json.loads(done.stdout)["jobs"][0]["id"]
    n_train = sum(dataset["counts"]["train"].values())
    minimal_s, _ = wall([PY, "-c", MINIMAL_TRAIN, str(n_train), str(args.size), "3", "64", args.network], env)
    rows.append(("train (1 epoch) wall / minimal script", train_s, minimal_s, train_s / minimal_s, "<= 1.1"))

    archive = base / "model.tar.gz"
    wall(trainyard("export", model, "--output", str(archive)), env)
    archive_s, _ = wall([PY, USE_ARCHIVE, str(archive), *images, "--json", "--cpu"], env)
    first_s, _ = wall(trainyard("classify", model, *images, "--json"), env)  # reads the checkpoint, exports
    rows.append(("CLI classify (no server, first) / use_archive", first_s, archive_s, first_s / archive_s, "-"))
    local_s, _ = wall(trainyard("classify", model, *images, "--json"), env)  # the export is cached now
    rows.append(("CLI classify (no server) / use_archive.py", local_s, archive_s, local_s / archive_s, "-"))
    server = subprocess.Popen(trainyard("serve", "--port", env["TRAINYARD_PORT"]), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_up(f"http://127.0.0.1:{env['TRAINYARD_PORT']}/api/system", lambda: server.poll() is None, 120)
        wall(trainyard("classify", model, images[0]), env)  # the server loads the model once
        served_s, _ = wall(trainyard("classify", model, *images, "--json"), env)
    finally:
        server.terminate()
        server.wait(30)
    rows.append(("CLI classify (server up) / use_archive.py", served_s, archive_s, served_s / archive_s, "-"))

    for files in (images, sorted(str(p) for p in more.rglob("*.jpg"))):
        many_rows(files, model, archive, base, env, args, rows)
    report(rows, import_times(env), len(images))


def many_rows(images: list[str], model: str, archive: Path, base: Path, env: dict, args: argparse.Namespace,
              rows: list) -> None:
    """Append the rows of a classify-many job over ``images`` against use_archive.py over the same
    files: images/s and peak memory, each the best of ``args.rounds``, interleaved."""
    listing = base / "list.txt"
    listing.write_text("".join(f"{p}\n" for p in images))
    jobs, plain = [], []
    for _ in range(args.rounds):
        jobs.append([float(v) for v in wall([PY, "-c", MANY_JOB, model, str(listing)], env)[1].stdout.split()])
        plain_s, done = wall([PY, "-c", PEAK, PY, USE_ARCHIVE, str(archive), *images, "--json", "--cpu"], env)
        plain.append([plain_s, float(done.stderr.splitlines()[-1])])
    (many_s, many_mib), (plain_s, plain_mib) = min(jobs), min(plain)
    n = len(images)
    rows.append((f"classify-many img/s / onnxruntime loop ({n} img)", n / many_s, n / plain_s, plain_s / many_s,
                 ">= 0.8"))
    rows.append((f"classify-many peak MiB / onnxruntime loop ({n})", many_mib, plain_mib, many_mib / plain_mib, "-"))


# Timed from queuing to done, as a running server sees the job: its process's start, imports and
# model load count; the imports of this queuing process (the server's, long done) do not.
MANY_JOB = """
import resource, sys, time
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.inference import create_inference_job
ctx = open_context()
start = time.perf_counter()
job = create_inference_job(ctx, "classify-many", sys.argv[1], list_file=sys.argv[2], foreground=True)
job = ctx.manager.run_foreground(job.id, poll_s=0.05)
assert job.status == "done", job.error
# The peak resident memory of the job process (this process's only child that has ended).
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""

# Runs the command in argv and writes the peak resident memory (MiB) of that process to stderr.
PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, file=sys.stderr)
sys.exit(done.returncode)
"""


def dataset_row(folder: Path, base: Path, env: dict, args: argparse.Namespace, rows: list) -> dict:
    """Append the row of `trainyard dataset create` on ``folder`` against the build alone (each the
    best of ``args.rounds``, interleaved); return the dataset's JSON document."""
    creates, builds = [], []
    count = sum(1 for _ in folder.rglob("*.jpg"))
    for _ in range(args.rounds):
        create_s, done = wall(trainyard("dataset", "create", "--name", "bench", "--train-folder", str(folder),
                                        "--size", f"{args.size}x{args.size}", "--json"), env)
        dataset = json.loads(done.stdout)
        job_dir = base / "home" / "jobs" / dataset["id"]
        creates.append(create_s)
        builds.append(float(wall([PY, "-c", BUILD_ALONE, str(job_dir)], env)[1].stdout))
    create_s, build_s = min(creates), min(builds)
    rows.append((f"dataset create wall / build alone ({count} img)", create_s, build_s, create_s / build_s,
                 "<= 1.3"))
    return dataset


def report(rows, imports, count: int) -> None:
    print(f"{'what':<46} {'trainyard':>10} {'baseline':>10} {'ratio':>7}  aim")
    for what, ours, theirs, ratio, aim in rows:
        print(f"{what:<46} {ours:>10.2f} {theirs:>10.2f} {ratio:>7.2f}  {aim}")
    print(f"(seconds, except classify-many in images/s and MiB; {count} images)")
    if not imports:
        return
    print("\nimport time (python -X importtime, cumulative):")
    for module, seconds, torch in imports:
        print(f"  {module:<26} {seconds:6.2f} s   torch imported: {'yes' if torch else 'no'}")


if __name__ == "__main__":
    main()
