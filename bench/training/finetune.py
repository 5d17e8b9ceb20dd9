"""Fine-tuning from the weights store, against training from scratch and a hand-written fine-tune.

1. Render digits with Pillow (random font size, place, rotation, colours, noisy background).
   Task A is digits 0-4, task B digits 5-9: two disjoint sets of classes.
2. Pretrain torchvision's ResNet-18 on task A with a hand loop, inputs ``(x - 0.5) / 0.25``, and
   save its state dict as digA.pth. Import it twice with `trainyard weights import`: ``digA``
   with ``--mean 0.5 --std 0.25`` (the normalisation it was trained with), ``digA-unknown``
   without (trainyard then recomputes BatchNorm statistics before the first epoch). Every fine-tune
   with trainable BatchNorm also recomputes them before each validation and checkpoint.
3. Task B with few images (20 training and 20 validation images a class): trainyard from scratch
   and from the weights (plain, ``--backbone-lr-mult 0.1``, ``--freeze-backbone``), through the
   CLI as a user would; and a hand torchvision loop from the same file with a new ``fc`` (full,
   0.1x backbone LR, frozen backbone) on the very same training and validation images (read from
   trainyard's dataset folder). Same epochs, batch, LR, solver (SGD, momentum 0.9, weight decay
   1e-4), fixed LR and seed.
4. Print validation top-1 per epoch, the best, the epochs to reach ``--target`` and each run's
   wall and CPU seconds.

    python bench/training/finetune.py [--epochs 6] [--per-class 20] [--size 32] [--pretrain-epochs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from PIL import Image, ImageDraw, ImageFont

from trainyard.core.paths import JobFolder
from trainyard.datasets.storage import open_split

TASK_A, TASK_B = "01234", "56789"
MEAN, STD = 0.5, 0.25


def render_digits(root: Path, digits: str, per_class: int, size: int, seed: int) -> Path:
    """Class folders of digits in random sizes, places, angles and colours over noise."""
    rng = np.random.default_rng(seed)
    for digit in digits:
        (root / digit).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            big = size * 2  # drawn large, then shrunk: smoother strokes
            image = Image.fromarray(rng.integers(0, 100, (big, big, 3), dtype=np.uint8))
            glyph = Image.new("L", (big, big))
            font = ImageFont.load_default(size=int(rng.uniform(0.6, 0.9) * big))
            centre = (big / 2 + rng.uniform(-0.15, 0.15) * big, big / 2 + rng.uniform(-0.1, 0.1) * big)
            ImageDraw.Draw(glyph).text(centre, digit, fill=255, font=font, anchor="mm")
            glyph = glyph.rotate(rng.uniform(-20, 20), resample=Image.Resampling.BILINEAR)
            colour = Image.new("RGB", (big, big), tuple(int(c) for c in rng.integers(130, 256, 3)))
            image.paste(colour, (0, 0), glyph)
            image.resize((size, size), Image.Resampling.BILINEAR).save(root / digit / f"{i}.png")
    return root


class Cli:
    """The trainyard CLI in one home."""

    def __init__(self, home: Path, data: Path):
        self.env = {**os.environ, "TRAINYARD_HOME": str(home), "TRAINYARD_DATA_ROOTS": str(data)}

    def __call__(self, *args: str) -> dict:
        return self.finish(self.start(*args))[0]

    def start(self, *args: str) -> tuple[subprocess.Popen, Path]:
        """Start a command; its output goes to a file (a full pipe would stall it)."""
        out = Path(tempfile.mkstemp(prefix="trainyard-bench-")[1])
        with open(out, "w") as stdout:
            process = subprocess.Popen([sys.executable, "-m", "trainyard.cli.main", *args, "--json"],
                                       env=self.env, stdout=stdout, stderr=subprocess.STDOUT, text=True)
        return process, out

    @staticmethod
    def finish(started: tuple[subprocess.Popen, Path]) -> tuple[dict, float]:
        """(the command's JSON document, CPU seconds of the command and the job it ran)."""
        process, out = started
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        text = out.read_text()
        out.unlink()
        if process.returncode:
            raise SystemExit(f"trainyard {' '.join(map(str, process.args))} failed:\n{text[-2000:]}")
        return json.loads(text[text.index("{"):]), usage.ru_utime + usage.ru_stime


# ---- the hand-written side ---------------------------------------------------------------

def to_input(images: np.ndarray) -> torch.Tensor:
    """uint8 (N, H, W, C) -> (N, C, H, W), ``(x - 0.5) / 0.25``: what the weights were trained on."""
    return (torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255 - MEAN) / STD


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        right = sum(int((model(x[i:i + 100]).argmax(1) == y[i:i + 100]).sum()) for i in range(0, len(x), 100))
    return right / len(x)


def fit(model, x, y, val, epochs: int, batch: int, groups, seed: int, frozen_bn: bool = False,
        solver: str = "sgd", say=lambda epoch, top1: None) -> list[float]:
    """SGD (as trainyard's default: momentum 0.9, weight decay 1e-4) or Adam over (x, y) for
    ``epochs``; the validation top-1 after each."""
    optimizer = (torch.optim.SGD(groups, momentum=0.9, weight_decay=1e-4) if solver == "sgd"
                 else torch.optim.Adam(groups))
    order_rng = np.random.default_rng(seed)
    curve = []
    for _ in range(epochs):
        model.train()
        if frozen_bn:  # a linear probe: the backbone, BatchNorm included, stays as it was
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.eval()
        order = order_rng.permutation(len(x))
        for i in range(0, len(x) - batch + 1, batch):
            index = order[i:i + batch]
            loss = torch.nn.functional.cross_entropy(model(x[index]), y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        curve.append(accuracy(model, *val))
        say(len(curve), curve[-1])
    return curve


def pretrain(path: Path, folder: Path, epochs: int, seed: int) -> float:
    """ResNet-18 on task A by a hand loop; its weights saved to ``path``; held-out top-1."""
    paths = sorted(folder.glob("*/*.png"))
    images = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths])
    labels = torch.tensor([TASK_A.index(p.parent.name) for p in paths])
    x = to_input(images)
    held = np.random.default_rng(seed).permutation(len(x))
    cut = len(x) * 9 // 10
    train, test = held[:cut], held[cut:]
    torch.manual_seed(seed)
    model = torchvision.models.resnet18(num_classes=len(TASK_A))
    fit(model, x[train], labels[train], (x[test], labels[test]), epochs, 32,
        [{"params": model.parameters(), "lr": 0.002}], seed, solver="adam",
        say=lambda epoch, top1: print(f"  pretraining epoch {epoch}: held-out top-1 {top1:.3f}", flush=True))
    torch.save(model.state_dict(), path)
    return accuracy(model, x[test], labels[test])


def hand_finetune(weights: Path, dataset: Path, how: str, epochs: int, lr: float, seed: int) -> list[float]:
    """The same file, a new ``fc``, the dataset's own training and validation images."""
    train, val = open_split(dataset, "train"), open_split(dataset, "val")
    x, y = to_input(train.read_batch(np.arange(len(train)))), torch.as_tensor(np.asarray(train.labels))
    vx, vy = to_input(val.read_batch(np.arange(len(val)))), torch.as_tensor(np.asarray(val.labels))
    torch.manual_seed(seed)
    model = torchvision.models.resnet18(num_classes=len(TASK_A))
    model.load_state_dict(torch.load(weights, weights_only=True))
    model.fc = torch.nn.Linear(model.fc.in_features, len(TASK_B))
    backbone = [p for n, p in model.named_parameters() if not n.startswith("fc.")]
    if how == "frozen":
        for p in backbone:
            p.requires_grad_(False)
        groups = [{"params": model.fc.parameters(), "lr": lr}]
    else:
        groups = [{"params": model.fc.parameters(), "lr": lr},
                  {"params": backbone, "lr": lr * (0.1 if how == "0.1x" else 1)}]
    return fit(model, x, y, (vx, vy), epochs, 16, groups, seed, frozen_bn=how == "frozen")


# ---- the table ---------------------------------------------------------------------------

def timed(run):
    """(what ``run()`` returns, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def show(rows: list[tuple[str, list[float], float]], target: float) -> None:
    width = max(len(name) for name, *_ in rows)
    pad = " " * max(0, 6 * len(rows[0][1]) - 19)
    print(f"\n{'run':<{width}}  val top-1 per epoch{pad}  best  to {target:.2f}  CPU s")
    for name, curve, cpu in rows:
        reached = next((i + 1 for i, v in enumerate(curve) if v >= target - 1e-9), None)
        print(f"{name:<{width}}  {' '.join(f'{v:.2f} ' for v in curve)}  {max(curve):.2f}  "
              f"{reached if reached else 'never':>7}  {cpu:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-class", type=int, default=20,
                        help="training (and validation) images per class of task B")
    parser.add_argument("--pretrain-per-class", type=int, default=120)
    parser.add_argument("--pretrain-epochs", type=int, default=4)
    parser.add_argument("--target", type=float, default=0.76, help="the top-1 'epochs to' counts")
    parser.add_argument("--hand", nargs="*", default=["full", "0.1x", "frozen"], choices=["full", "0.1x", "frozen"],
                        help="hand-written fine-tunes to run beside trainyard's")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads, here and in the trainyard runs (1 is steadiest on a busy machine)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the trainyard runs read it at start
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        home, data = Path(tmp) / "home", Path(tmp) / "data"
        cli = Cli(home, data)
        weights = data / "digA.pth"
        data.mkdir(parents=True)
        wall = time.perf_counter()
        top1 = pretrain(weights, render_digits(data / "task-a", TASK_A, args.pretrain_per_class, args.size, 1),
                        args.pretrain_epochs, args.seed)
        print(f"pretraining on digits {TASK_A}: held-out top-1 {top1:.3f} ({time.perf_counter() - wall:.0f} s)")
        cli("weights", "import", "digA", str(weights), "--network", "resnet18", "--mean", str(MEAN), "--std", str(STD))
        cli("weights", "import", "digA-unknown", str(weights), "--network", "resnet18")
        folder = render_digits(data / "task-b", TASK_B, 2 * args.per_class, args.size, 2)
        doc = cli("dataset", "create", "--name", "task-b", "--train-folder", str(folder), "--size",
                  f"{args.size}x{args.size}", "--val-percent", "50", "--min-per-class", "1")
        dataset_id = doc["id"] if "id" in doc else doc["jobs"][0]["id"]
        dataset_dir = JobFolder(home / "jobs" / dataset_id).dataset

        common = ("train", "--dataset", dataset_id, "--network", "resnet18", "--epochs", str(args.epochs),
                  "--batch-size", "16", "--lr", str(args.lr), "--lr-policy", "fixed", "--seed", str(args.seed))
        runs = {"trainyard, from scratch": (),
                "trainyard, --pretrained digA": ("--pretrained", "digA"),
                "trainyard, --pretrained digA --backbone-lr-mult 0.1": ("--pretrained", "digA",
                                                                        "--backbone-lr-mult", "0.1"),
                "trainyard, --pretrained digA --freeze-backbone": ("--pretrained", "digA", "--freeze-backbone"),
                "trainyard, --pretrained digA-unknown (BN recalibrated)": ("--pretrained", "digA-unknown"),
                "trainyard, --pretrained digA-unknown --freeze-backbone": ("--pretrained", "digA-unknown",
                                                                           "--freeze-backbone")}
        # All at once, one thread each: on a busy machine this takes a fraction of the time in turn.
        wall = time.perf_counter()
        started = {name: cli.start(*common, *extra) for name, extra in runs.items()}
        hand_rows = []
        for how in args.hand:
            curve, _, cpu_ = timed(lambda how=how: hand_finetune(weights, dataset_dir, how, args.epochs,
                                                                 args.lr, args.seed))
            hand_rows.append((f"hand torchvision, new fc, {how}", curve, cpu_))
            print(f"{hand_rows[-1][0]}: {' '.join(f'{v:.2f}' for v in curve)}", flush=True)
        rows = []
        for name, process in started.items():
            doc, cpu_ = cli.finish(process)
            job = doc["jobs"][0]
            if job.get("status") != "done":
                raise SystemExit(f"{name}: the job ended {job.get('status')}: {job.get('error')}")
            rows.append((name, [v / 100 for _, v in job["metrics"]["val_accuracy"]], cpu_))
            print(f"{name}: {' '.join(f'{v:.2f}' for v in rows[-1][1])}", flush=True)
        rows += hand_rows
        wall = time.perf_counter() - wall
        print(f"\nResNet-18, {args.size}x{args.size}; task B: {args.per_class} training and {args.per_class} "
              f"validation images a class; {args.epochs} epochs, batch 16, lr {args.lr}, fixed, SGD, seed {args.seed}; "
              f"load average {os.getloadavg()[0]:.1f}")
        show(rows, args.target)
        by_name = {name: (curve, cpu_) for name, curve, cpu_ in rows}
        tuned = by_name["trainyard, --pretrained digA"]
        print(f"\nall runs side by side in {wall:.0f} s wall")
        if "full" in args.hand:
            hand = by_name["hand torchvision, new fc, full"]
            print(f"trainyard's fine-tune best {max(tuned[0]):.2f} against the hand script's {max(hand[0]):.2f} "
                  f"(difference {max(tuned[0]) - max(hand[0]):+.2f}); CPU seconds trainyard / hand = "
                  f"{tuned[1] / hand[1]:.2f} (a whole job: process start, dataset checks, checkpoints)")


if __name__ == "__main__":
    main()
