"""AMP on and off on a GPU, through trainyard's loop (bench/training/train.py's rows; see its docstring).

The same network (GoogLeNet by default, 224x224, batch 128) is trained in fp32 and in the
``--precision`` asked (auto: bf16 from Ampere on, fp16 with a GradScaler before); the fastest
epoch of each counts. Without CUDA it prints one "skipped" line.

    python bench/training/train.py --amp-only [--amp-network googlenet] [--amp-batch-size 128] [--rounds 2]
"""

from __future__ import annotations

from pathlib import Path

import torch
from train import Trainyard, best_epochs, make_images, write_dataset


def amp_rows(args, root: Path) -> None:
    """AMP on and off on the GPU: the same network trained in fp32 and in ``--precision`` (auto:
    bf16 from Ampere on, fp16 with a scaler before), taking turns; images/s, peak memory, ratio."""
    if not torch.cuda.is_available():
        print(f"AMP on/off ({args.amp_network}): skipped, no CUDA")
        return
    on = args.precision if args.precision != "fp32" else "auto"
    images, labels = make_images(args.amp_images, 224, 3, seed=3)
    dataset = write_dataset(root / "amp", images, labels)
    rows = {}
    for precision in ("fp32", on):
        torch.cuda.reset_peak_memory_stats()
        runner = Trainyard(dataset, root / f"amp-{precision}", args.amp_network, args.amp_batch_size, precision)
        wall, _ = best_epochs({precision: runner}, args.rounds)
        dtype = runner.run.stepper.dtype
        rows[precision] = (len(runner.run.train_loader) * args.amp_batch_size / wall[precision],
                           torch.cuda.max_memory_allocated() / 2**20, "fp32" if dtype is None else str(dtype))
        del runner
        torch.cuda.empty_cache()
    print(f"AMP on/off, {args.amp_network} 224x224 batch {args.amp_batch_size}, {torch.cuda.get_device_name()}:")
    for precision, (rate, peak, dtype) in rows.items():
        print(f"  amp {'off' if precision == 'fp32' else 'on ':3s} precision {precision:4s} ({dtype}) "
              f"{rate:8.0f} images/s, peak {peak:7.0f} MiB")
    print(f"  AMP on / off speed: {rows[on][0] / rows['fp32'][0]:.2f}x")
