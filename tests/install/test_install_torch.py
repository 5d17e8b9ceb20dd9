"""`make run` / `make test` pick the torch wheel themselves (scripts/install-torch): the CPU wheel
where no NVIDIA GPU shows, the default one when the CPU index cannot be reached, and they say which.

A fake pip records its calls, so nothing is downloaded and the GPU check is pointed at test paths.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-torch"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def fake_pip(tmp_path: Path, *, index_works: bool, installed: str = "") -> Path:
    """A pip that logs each call; `install --index-url` fails unless index_works; `show torch`
    prints a version when `installed` is given."""
    log = tmp_path / "pip.log"
    pip = tmp_path / "pip"
    show = f'echo "Version: {installed}"; exit 0' if installed else "exit 1"
    install = "exit 0" if index_works else 'echo "ERROR: Could not find a version" >&2; exit 1'
    pip.write_text(f"""#!/usr/bin/env bash
echo "$*" >> {log}
case "$1" in
  show) {show} ;;
  install) {install} ;;
esac
""")
    pip.chmod(0o755)
    return pip


def run_script(tmp_path: Path, pip: Path, *, gpu: bool = False, **env: str) -> subprocess.CompletedProcess:
    marker = tmp_path / "nvidia0"
    if gpu:
        marker.write_text("")
    environ = {"PATH": "/usr/bin:/bin", "TRAINYARD_NVIDIA_PATHS": str(marker), **env}
    return subprocess.run([str(SCRIPT), str(pip)], capture_output=True, text=True, env=environ,
                          timeout=60, check=True)


def pip_calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "pip.log").read_text().splitlines()


def test_no_gpu_installs_the_cpu_wheel_first_with_a_short_timeout(tmp_path):
    pip = fake_pip(tmp_path, index_works=True)
    out = run_script(tmp_path, pip).stdout
    install = [c for c in pip_calls(tmp_path) if c.startswith("install")]
    assert install == [f"install --timeout 5 --retries 0 --index-url {CPU_INDEX} torch torchvision"]
    assert "no NVIDIA GPU found" in out and "chose the CPU torch wheel" in out


def test_unreachable_cpu_index_falls_back_to_the_default_wheel_and_says_so(tmp_path):
    pip = fake_pip(tmp_path, index_works=False)
    result = run_script(tmp_path, pip)
    assert "could not be reached: falling back to the default torch wheel" in result.stdout
    assert len([c for c in pip_calls(tmp_path) if c.startswith("install")]) == 1


def test_a_gpu_keeps_the_default_wheel(tmp_path):
    pip = fake_pip(tmp_path, index_works=True)
    out = run_script(tmp_path, pip, gpu=True).stdout
    assert "NVIDIA GPU found" in out
    assert not [c for c in pip_calls(tmp_path) if c.startswith("install")]


def test_an_installed_torch_is_kept(tmp_path):
    pip = fake_pip(tmp_path, index_works=True, installed="2.5.0+cpu")
    out = run_script(tmp_path, pip).stdout
    assert "torch 2.5.0+cpu is already installed: keeping it" in out
    assert not [c for c in pip_calls(tmp_path) if c.startswith("install")]


def test_the_makefile_installs_torch_before_trainyard(tmp_path):
    """`make -n install` in a copy with a fresh venv shows the order the stamp rule runs."""
    plan = subprocess.run(["make", "-n", "-C", str(ROOT), "install", f"VENV={tmp_path / 'venv'}"],
                          capture_output=True, text=True, check=True, env=dict(os.environ)).stdout
    lines = plan.splitlines()
    torch_line = next(i for i, line in enumerate(lines) if "scripts/install-torch" in line)
    trainyard_line = next(i for i, line in enumerate(lines) if "install -e" in line)
    assert torch_line < trainyard_line


def test_a_cpu_torch_and_torchvision_that_do_not_work_together_are_replaced_by_the_default_wheels(tmp_path):
    pip = fake_pip(tmp_path, index_works=True)
    python = tmp_path / "python"  # the environment's python: torchvision's first import fails
    python.write_text("#!/usr/bin/env bash\n"
                      "echo 'RuntimeError: operator torchvision::nms does not exist' >&2\nexit 1\n")
    python.chmod(0o755)
    out = run_script(tmp_path, pip).stdout
    assert "do not work together: falling back to the default torch wheel" in out
    assert pip_calls(tmp_path)[-1] == "uninstall -y -q torch torchvision"
    assert "chose the CPU torch wheel" not in out
