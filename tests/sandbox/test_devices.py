"""A confined GPU job gets its leased GPUs' device nodes (by NVML minor number) and the control
nodes, never another GPU's (sandbox/devices.py); bwrap binds exactly those (namespaces.py)."""

from __future__ import annotations

import sys
import types

from trainyard.sandbox import devices, namespaces
from trainyard.sandbox.policy import Policy

MACHINE = {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3", "/dev/nvidiactl",
           "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}


def test_the_nodes_are_the_leased_minors_and_the_control_nodes():
    assert devices.nvidia_nodes([2], exists=MACHINE.__contains__) == [
        "/dev/nvidia2", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"]
    assert devices.nvidia_nodes([3, 1, 3], exists=MACHINE.__contains__)[:2] == ["/dev/nvidia1", "/dev/nvidia3"]
    assert devices.nvidia_nodes([7], exists=MACHINE.__contains__)[0] == "/dev/nvidiactl"  # no such GPU: none


def test_minor_numbers_come_from_nvml_not_the_index(monkeypatch):
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda index: {0: "a", 1: "b"}[index],
        nvmlDeviceGetMinorNumber=lambda handle: {"a": 3, "b": 0}[handle])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert devices.minor_numbers([1, 0]) == [0, 3]


def test_without_nvml_the_index_is_the_minor(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    assert devices.minor_numbers(["2"]) == [2]


def test_bwrap_binds_only_the_policy_devices(tmp_path):
    nodes = []
    for name in ("nvidia0", "nvidia1", "nvidiactl"):
        (tmp_path / name).write_text("")
        nodes.append(str(tmp_path / name))
    args = namespaces.bwrap_args(Policy(devices=[nodes[1], nodes[2], str(tmp_path / "missing")]))
    bound = [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"]
    assert bound == [nodes[1], nodes[2]]
    assert "--unshare-net" in args and "--die-with-parent" in args and args[-1] == "--"


def test_a_job_on_the_host_network_keeps_it():
    assert "--unshare-net" not in namespaces.bwrap_args(Policy(host_network=True))
