"""Benchmark what checkpoints cost the training loop, in one run.

ResNet-18 (11.7 M parameters, ~90 MB with SGD momentum) trains ``--epochs`` short epochs with a
checkpoint after every one. The hot-path cost is the time the training thread spends in the
snapshot (the CPU copy, and waiting for a previous write still in flight), measured around
`Reporter.snapshot`; the write itself runs in the background. Also timed: the same write done
in the foreground (`save_checkpoint` of the same state), i.e. what the loop paid before.

Printed: per epoch, the hot-path seconds and the foreground-write seconds as a share of the
epoch's wall time. Aim: the hot path under 2 %.

    python bench/training/checkpoint.py                    # 3 epochs of 512 32x32 images
    python bench/training/checkpoint.py --images 2048 --size 64
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "training"))
from model_helpers import make_dataset, model_spec  # noqa: E402  (after the path is set)

from trainyard.artifact.checkpoint import save_checkpoint  # noqa: E402
from trainyard.core.events import EventWriter, read_events  # noqa: E402
from trainyard.training import loop  # noqa: E402
from trainyard.training.state import checkpoint_state  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    hot: list[float] = []
    foreground: list[float] = []
    original = loop.Reporter.snapshot

    def timed_snapshot(self, epoch, batches):
        # What the loop used to pay: the same state written in the foreground, first, while no
        # background write runs (not counted in the epoch's time below).
        state = checkpoint_state(self.run, epoch, batches)
        start = time.perf_counter()
        save_checkpoint(Path(tempfile.gettempdir()) / "bench-foreground.pt", state)
        foreground.append(time.perf_counter() - start)
        start = time.perf_counter()
        path = original(self, epoch, batches)
        hot.append(time.perf_counter() - start)
        return path

    loop.Reporter.snapshot = timed_snapshot
    with tempfile.TemporaryDirectory() as tmp:
        dataset = make_dataset(Path(tmp) / "ds", train=args.images, val=64, size=args.size, channels=3)
        spec = model_spec(dataset, network="resnet18", epochs=args.epochs, batch_size=64,
                          snapshot_interval=1, val_interval=args.epochs)
        job = Path(tmp) / "job"
        start = time.perf_counter()
        with EventWriter(job) as events:
            loop.train(spec, job, events)
        wall = time.perf_counter() - start - sum(foreground)
        written = [e["epoch"] for e in read_events(job / "events.jsonl", {"checkpoint"})]
    assert written == list(range(1, args.epochs + 1)), written
    epoch_s = wall / args.epochs
    print(f"ResNet-18, {args.images} images {args.size}x{args.size}, {args.epochs} epochs: "
          f"{epoch_s:.2f} s per epoch (checkpoint every epoch)")
    print(f"hot path (background write): {1000 * sum(hot) / len(hot):7.1f} ms per checkpoint = "
          f"{100 * sum(hot) / len(hot) / epoch_s:5.2f} % of an epoch (aim < 2 %)")
    print(f"foreground write (before):   {1000 * sum(foreground) / len(foreground):7.1f} ms per checkpoint = "
          f"{100 * sum(foreground) / len(foreground) / epoch_s:5.2f} % of an epoch")
    print(f"ratio hot path / foreground: {sum(hot) / sum(foreground):.3f}")


if __name__ == "__main__":
    main()
