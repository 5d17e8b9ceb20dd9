"""Fetch the wheels a GPU machine's Python lacks for trainyard into ``.gpu-wheels/`` (git-ignored).

The lent GPU machine has PyTorch, torchvision, timm, numpy, Pillow, onnx, onnxruntime, psutil,
nvidia-ml-py, safetensors, typer, rich and jinja2, but none of trainyard's other dependencies,
and it cannot reach a package index. This downloads those (pure Python, plus the two compiled
ones, pydantic-core and SQLAlchemy, as CPython 3.12 x86-64 manylinux wheels) at the versions this
environment has, without their dependencies (those are in the list or already there), a few MB:

    python bench/gpu/gpu_wheels.py            # then carry .gpu-wheels (README, "One GPU check")

bench/gpu_check.py installs them on the machine with ``pip install --no-index --no-deps
--target``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

MISSING = ["pydantic", "pydantic-core", "annotated-types", "typing-inspection", "pydantic-settings",
           "python-dotenv", "SQLAlchemy", "fastapi", "starlette", "uvicorn", "python-multipart",
           "optuna", "alembic", "Mako", "colorlog"]
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]


def command(dest: Path) -> list[str]:
    pins = [f"{name}=={version(name)}" for name in MISSING]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
            "--implementation", "cp", *platforms, "-d", str(dest), *pins]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=Path(__file__).resolve().parents[2] / ".gpu-wheels")
    parser.add_argument("--print", action="store_true", help="print the pip command instead of running it")
    args = parser.parse_args()
    cmd = command(args.dest)
    if args.print:
        print(" ".join(cmd))
        return
    args.dest.mkdir(exist_ok=True)
    subprocess.run(cmd, check=True)
    wheels = sorted(args.dest.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels)
    print(f"{len(wheels)} wheels, {size / 2**20:.1f} MiB in {args.dest}")


if __name__ == "__main__":
    main()
