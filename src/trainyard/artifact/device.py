"""Whether a job's process can use the GPUs the runner leased it, and if not, why not.

The runner tells a job it holds real GPUs through ``TRAINYARD_LEASED_GPUS`` (core/vocabulary.py;
fake GPUs leave it unset). Such a job must run on them: one that found CUDA unusable (a driver
older than the PyTorch wheel needs, a device node missing in the sandbox, libcuda unreadable, a
CPU-only PyTorch) would otherwise train on the CPU, slowly, while the GPUs stay leased to it.
`gpu_problem` names the cause in one line, from CUDA's own message where it gives one.
"""

from __future__ import annotations

from trainyard.core import environment
from trainyard.core.errors import UserError


class GpuUnusable(UserError, RuntimeError):
    """The job holds GPUs it cannot use; the message names the cause (it becomes the job's error)."""


def leased_gpus() -> list[str]:
    """The lease indices of the real GPUs the runner gave this process; [] for none."""
    return environment.leased_gpus()


def gpu_problem(expected: int = 1) -> str | None:
    """None when CUDA shows at least ``expected`` devices; else what is wrong, in one line."""
    import torch

    if torch.version.cuda is None:
        return f"this PyTorch ({torch.__version__}) is built without CUDA; install a CUDA build"
    try:
        torch.cuda.init()  # raises CUDA's reason: no driver, a driver too old, no device
    except Exception as exc:
        return _first_line(exc)
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is false"
    count = torch.cuda.device_count()
    if count < expected:
        return (f"CUDA shows {count} device{'s' * (count != 1)} of the {expected} leased "
                f"(CUDA_VISIBLE_DEVICES={environment.cuda_visible_devices() or ''})")
    return None


def require_leased_gpus() -> bool:
    """True when this process was given real GPUs and CUDA can use them; False when it was given
    none; GpuUnusable (naming the cause) when it was given some that CUDA cannot use."""
    leased = leased_gpus()
    if not leased:
        return False
    problem = gpu_problem(len(leased))
    if problem is not None:
        which = ", ".join(f"gpu:{i}" for i in leased)
        raise GpuUnusable(f"this job was given {which} but cannot use CUDA: {problem}. The job stops "
                          "here rather than run on the CPU while holding the GPU")
    return True


def _first_line(exc: Exception) -> str:
    """CUDA's first sentence ("The NVIDIA driver on your system is too old (found version
    11040)"), without the advice and addresses that follow it."""
    lines = str(exc).strip().splitlines()
    return lines[0].split(". ")[0].rstrip(".") if lines else type(exc).__name__
