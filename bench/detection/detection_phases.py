"""Where a side of bench/detection/detection.py spends its time: start-up, training, validation, mAP, checkpoints.

bench/detection/detection.py --phases runs each side's own process through this file: it wraps the
calls both sides make (torchvision's detectors' forward, split by mode; backward; Adam's step;
torchmetrics' mAP; torch.save) with timers, runs the side's command unchanged (runpy), and at
exit writes each phase's wall and process-CPU seconds and its count to a JSON file. The same
wrappers on both sides, so a phase that only one side has shows as a row the other side lacks.

  start-up            wrapper start to the first training forward (imports, spec, data, build)
  train forward       model(images, targets) with gradients
  backward, step      the backward pass, Adam's step
  val-loss forward    model(images, targets) without gradients (a validation loss)
  eval forward        model(images): boxes for mAP
  mAP update/compute  torchmetrics' MeanAveragePrecision
  checkpoint save     torch.save (trainyard writes off the main thread: it overlaps the rest)
  other               the rest of the process's wall time: data loading, Python, exit

    python bench/detection/detection_phases.py OUT.json -- -m trainyard.training.run JOB
    python bench/detection/detection_phases.py OUT.json -- bench/detection/detection_reference.py DATASET OUT ...
"""

from __future__ import annotations

import atexit
import functools
import json
import runpy
import sys
import threading
import time
from pathlib import Path

STARTED = time.perf_counter()
totals: dict[str, list[float]] = {}  # phase -> [wall s, process CPU s, calls]
_inside = threading.local()  # a phase within a phase (a forward inside mAP) counts once, outside


def _timed(label, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if getattr(_inside, "phase", None) is not None:
            return function(*args, **kwargs)
        name = label(*args) if callable(label) else label
        _inside.phase, wall, cpu = name, time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            _inside.phase = None
            row = totals.setdefault(name, [0.0, 0.0, 0])
            row[0] += time.perf_counter() - wall
            row[1] += time.process_time() - cpu
            row[2] += 1
    return wrapper


def _forward_phase(model, *args) -> str:
    import torch

    if not model.training:
        return "eval forward"
    if torch.is_grad_enabled():
        if "start-up" not in totals:  # the first training forward ends start-up
            totals["start-up"] = [time.perf_counter() - STARTED, time.process_time(), 1]
        return "train forward"
    return "val-loss forward"


def install() -> None:
    import torch
    from torchmetrics.detection import MeanAveragePrecision
    from torchvision.models.detection import fcos, generalized_rcnn, retinanet, ssd

    for cls in (generalized_rcnn.GeneralizedRCNN, retinanet.RetinaNet, fcos.FCOS, ssd.SSD):
        cls.forward = _timed(_forward_phase, cls.forward)
    torch.autograd.backward = _timed("backward", torch.autograd.backward)
    torch.optim.Adam.step = _timed("optimizer step", torch.optim.Adam.step)
    MeanAveragePrecision.update = _timed("mAP update", MeanAveragePrecision.update)
    MeanAveragePrecision.compute = _timed("mAP compute", MeanAveragePrecision.compute)
    torch.save = _timed("checkpoint save", torch.save)


def write(out: Path) -> None:
    wall = time.perf_counter() - STARTED
    timed = sum(row[0] for name, row in totals.items() if name != "checkpoint save")
    totals["other"] = [wall - timed, 0.0, 1]
    totals["total"] = [wall, time.process_time(), 1]
    out.write_text(json.dumps(totals))


def main() -> None:
    out, rest = Path(sys.argv[1]), sys.argv[sys.argv.index("--") + 1:]
    install()
    atexit.register(write, out)
    if rest[0] == "-m":
        sys.argv = [rest[1], *rest[2:]]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = rest
        sys.path.insert(0, str(Path(rest[0]).resolve().parent))
        runpy.run_path(rest[0], run_name="__main__")


def summed(runs: list[dict]) -> dict:
    """One side's phases over its runs (seeds): each phase's wall, CPU and calls added up."""
    names = dict.fromkeys(name for phases in runs for name in phases)
    return {name: [sum(p.get(name, [0, 0, 0])[i] for p in runs) for i in range(3)] for name in names}


def table(sides: dict[str, dict[str, list[float]]]) -> str:
    """Phases of each side (summed over its runs) side by side: wall s, CPU s, calls."""
    names = list(dict.fromkeys(n for phases in sides.values() for n in phases))
    names = [n for n in names if n not in ("other", "total")] + ["other", "total"]
    head = f"{'phase':>18}" + "".join(f"  {side:>26}" for side in sides)
    lines = [head, f"{'':>18}" + "".join(f"  {'wall s   CPU s   calls':>26}" for _ in sides)]
    for name in names:
        cells = ""
        for phases in sides.values():
            wall, cpu, calls = phases.get(name, (0.0, 0.0, 0))
            cells += f"  {wall:10.1f} {cpu:7.1f} {int(calls):7d}" if name in phases else f"  {'-':>26}"
        lines.append(f"{name:>18}{cells}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
