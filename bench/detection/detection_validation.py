"""Benchmark a detector's validation with its two passes sharing the backbone (and head) against
both passes computing everything, as validation did before training/detection/shared_parts.py.

One process, one model per network (random initial weights, seed 0), the same stored split of
shapes (tests/detection_data.py's), each validation started the same way (the model in training
mode, as a validation finds it between steps), the two alternating ``--repeats`` times so a change
of load falls on both alike. Prints, per network, the wall and CPU seconds of each side, their
ratios (shared / both full), and that val_loss and mAP are the same on both sides.

    python bench/detection/detection_validation.py [--images 48] [--size 64] [--repeats 3] [--threads 2]
        [--networks template,ssdlite320_mobilenet_v3_large,fcos:timm:test_resnet]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.detection_data: the shapes the tests train on
sys.path.insert(0, str(ROOT / "tests" / "training" / "detection"))

NETWORKS = "template,ssdlite320_mobilenet_v3_large,fcos:timm:test_resnet"


def build(name: str, classes: int, size: int):
    import torch

    from trainyard.networks import create_network, load_network_source
    from trainyard.networks.custom_detection import TEMPLATE

    torch.manual_seed(0)
    return load_network_source(TEMPLATE)(classes, 3, size) if name == "template" else create_network(
        name, classes, 3, size)


def validate(model, split, shared: bool) -> tuple[dict, float, float]:
    """(figures, wall s, CPU s) of one validation of ``model`` on ``split``."""
    import torch

    from trainyard.networks.detection import label_offset
    from trainyard.training.detection import steps
    from trainyard.training.detection.data import DetectionBatchLoader

    loader = DetectionBatchLoader(split, 8, label_offset=label_offset(model))
    parts = steps.shared_parts
    steps.shared_parts = parts if shared else (lambda model: [])  # type: ignore[assignment]
    model.train()
    torch.manual_seed(1)  # Faster R-CNN's loss samples regions: the same draws on both sides
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        figures = steps.evaluate_detection(model, loader)
    finally:
        steps.shared_parts = parts
    return figures, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--networks", default=NETWORKS)
    args = parser.parse_args()
    import torch
    from detection_helpers import CLASSES, make_detection_dataset

    from trainyard.datasets.detection.store import DetectionSplit

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-validation-") as tmp:
        split = DetectionSplit(make_detection_dataset(Path(tmp) / "ds", train=1, val=args.images,
                                                      size=args.size) / "val")
        print(f"{args.images} validation images at {args.size}x{args.size}, batch 8, {args.threads} threads, "
              f"{args.repeats} repeats a side, load average {os.getloadavg()[0]:.2f}")
        for name in args.networks.split(","):
            model = build(name, len(CLASSES), args.size)
            validate(model, split, True)  # warm-up: first calls allocate and load kernels
            sums = {True: [0.0, 0.0], False: [0.0, 0.0]}
            figures = {}
            for _ in range(args.repeats):
                for shared in (True, False):
                    figures[shared], wall, cpu = validate(model, split, shared)
                    sums[shared][0] += wall
                    sums[shared][1] += cpu
            (a_wall, a_cpu), (b_wall, b_cpu) = sums[True], sums[False]
            same = all(abs(figures[True][k] - figures[False][k]) <= 1e-6 * max(1.0, abs(figures[False][k]))
                       for k in figures[False])
            print(f"{name:>32}: shared {a_wall:6.1f} s wall {a_cpu:6.1f} CPU-s; both full {b_wall:6.1f} s wall "
                  f"{b_cpu:6.1f} CPU-s; ratio wall {a_wall / b_wall:.2f} CPU {a_cpu / b_cpu:.2f}; "
                  f"figures {'the same' if same else 'DIFFER'} (val_loss {figures[True]['val_loss']:.5f})")


if __name__ == "__main__":
    main()
