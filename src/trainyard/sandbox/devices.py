"""The NVIDIA device nodes and driver libraries a confined GPU job gets: its leased GPUs' nodes
only (``/dev/nvidia<minor>``, by NVML minor number, which is not the CUDA index), plus the
control nodes every CUDA process opens, and the folders that hold the driver's libraries
wherever the machine put them (``ldconfig``'s cache: /usr/lib/x86_64-linux-gnu on Debian,
/usr/local/nvidia/lib64 in many containers). Torch-free; NVML is read only when it is there.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable

CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
DRIVER_LIBRARIES = ("libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so")


def nvidia_nodes(minors: Iterable[int], dev: str = "/dev", exists: Callable[[str], bool] = os.path.exists) -> list[str]:
    """The nodes a job leasing the GPUs of NVML ``minors`` may open: theirs and the control nodes
    that exist (``/dev/nvidia-caps`` too, for MIG); never another GPU's."""
    nodes = [f"{dev}/nvidia{int(m)}" for m in sorted(set(minors))]
    nodes += [f"{dev}/{name}" for name in CONTROL_NODES]
    nodes.append(f"{dev}/nvidia-caps")
    return [n for n in nodes if exists(n)]


def minor_numbers(gpu_indices: Iterable[int | str]) -> list[int]:
    """NVML's minor number of each GPU index (NVML's order, as the leases count them); an index
    NVML cannot answer for is taken as its own minor number (the usual case)."""
    indices = [int(i) for i in gpu_indices]
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVML (no driver, or not installed): the index is the best guess
        return indices
    try:
        out = []
        for index in indices:
            try:
                out.append(int(pynvml.nvmlDeviceGetMinorNumber(pynvml.nvmlDeviceGetHandleByIndex(index))))
            except Exception:
                out.append(index)
        return out
    finally:
        pynvml.nvmlShutdown()


def prepare_uvm() -> None:
    """/dev/nvidia-uvm appears on first use, which a sandbox cannot do: make it outside, where
    nvidia-modprobe is installed (a no-op where the node exists)."""
    if not os.path.exists("/dev/nvidia-uvm") and os.path.exists("/dev/nvidiactl"):
        try:
            subprocess.run(["nvidia-modprobe", "-u", "-c0"], capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            pass


def driver_library_folders() -> list[str]:
    """The folders of the driver's user-space libraries, from ldconfig's cache; [] without any."""
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    folders = {os.path.dirname(line.rsplit("=>", 1)[1].strip()) for line in listing.splitlines()
               if "=>" in line and any(line.strip().startswith(lib) for lib in DRIVER_LIBRARIES)}
    return sorted(os.path.realpath(f) for f in folders)


def gpu_access(gpu_indices: Iterable[int | str]) -> tuple[list[str], list[str]]:
    """(device nodes, library folders) for a job leasing ``gpu_indices``."""
    indices = list(gpu_indices)
    if not indices:
        return [], []
    prepare_uvm()
    return nvidia_nodes(minor_numbers(indices)), driver_library_folders()
