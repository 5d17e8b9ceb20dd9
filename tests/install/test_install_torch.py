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


def fake_pip(tmp_path: Path, *, index_works: bool, installed: str = "", installed_after: str = "") -> Path:
    """A pip that logs each call; `install --index-url` fails unless index_works; `show torch`
    prints a version when `installed` is given (``installed_after``: once an install ran)."""
    log = tmp_path / "pip.log"
    pip = tmp_path / "pip"
    show = f'echo "Version: {installed}"; exit 0' if installed else "exit 1"
    if installed_after:
        show = f'grep -q "^install" {log} && echo "Version: {installed_after}" && exit 0; exit 1'
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


def run_script(tmp_path: Path, pip: Path, *, gpu: bool = False, check: bool = True,
               **env: str) -> subprocess.CompletedProcess:
    marker = tmp_path / "nvidia0"
    if gpu:
        marker.write_text("")
    environ = {"PATH": "/usr/bin:/bin", "TRAINYARD_NVIDIA_PATHS": str(marker), **env}
    return subprocess.run([str(SCRIPT), str(pip)], capture_output=True, text=True, env=environ,
                          timeout=60, check=check)


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
    assert "(CUDA build, several GB)" in result.stdout
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


def fake_python(tmp_path: Path, *, works_after: str | None) -> Path:
    """The environment's python: the torch/torchvision check fails (as a mismatched pair does)
    until pip's log holds ``works_after`` (never, for None)."""
    python = tmp_path / "python"
    fixed = f"grep -q -- {works_after!r} {tmp_path / 'pip.log'} && exit 0\n" if works_after else ""
    python.write_text(f"#!/usr/bin/env bash\n{fixed}"
                      "echo 'RuntimeError: operator torchvision::nms does not exist' >&2\nexit 1\n")
    python.chmod(0o755)
    return python


def test_a_mismatched_cpu_torchvision_is_replaced_by_the_one_of_torchs_release(tmp_path):
    """Issue 46, point 1: the pair check used to swap the CPU torch for the CUDA build (6.3 GB)."""
    pip = fake_pip(tmp_path, index_works=True, installed_after="2.5.1+cpu")
    fake_python(tmp_path, works_after="torchvision==0.20.*")
    result = run_script(tmp_path, pip)
    installs = [c for c in pip_calls(tmp_path) if c.startswith("install")]
    assert installs[-1] == ("install --timeout 5 --retries 0 --no-deps --force-reinstall "
                            f"--index-url {CPU_INDEX} torchvision==0.20.*")
    assert "uninstall" not in " ".join(pip_calls(tmp_path))
    assert "chose the CPU torch wheel (2.5.1+cpu)" in result.stdout


def test_a_pair_that_cannot_be_mended_falls_back_to_the_default_pair_and_says_how_to_get_the_cpu_one(
        tmp_path):
    """A mirror with a CPU torch but no CPU torchvision of its release (CI's) must still install."""
    pip = fake_pip(tmp_path, index_works=True, installed_after="2.5.1+cpu")
    fake_python(tmp_path, works_after=None)
    result = run_script(tmp_path, pip, check=False)
    assert result.returncode == 0
    assert "uninstall -y torch torchvision" in pip_calls(tmp_path)
    assert (f"{pip} install --force-reinstall --index-url {CPU_INDEX} torch==2.5.1 torchvision==0.20.*"
            in result.stdout)
    assert "CUDA build, several GB" in result.stdout and "chose the CPU torch wheel" not in result.stdout


def test_make_run_installs_the_runtime_dependencies_and_make_test_the_dev_extras(tmp_path):
    def plan(target: str) -> str:
        return subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'venv'}"],
                              capture_output=True, text=True, check=True, env=dict(os.environ)).stdout

    assert "pip install -e .\n" in plan("install") and "[dev]" not in plan("install")
    assert "pip install -e '.[dev]'" in plan("lint")
