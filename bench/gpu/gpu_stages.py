"""The stages of bench/gpu_check.py that are not a script of their own; each prints RESULT: lines.

    python bench/gpu/gpu_stages.py environment     # torch, CUDA, cuDNN, NCCL, each GPU's capability, driver
    python bench/gpu/gpu_stages.py nvml            # trainyard's inventory and monitor; a lease by UUID
    python bench/gpu/gpu_stages.py export-resume   # a GPU-trained job: export, GPU vs CPU logits, CPU resume
    python bench/gpu/gpu_stages.py precision       # ResNet-18 b128 jobs in fp32, bf16, fp16 and compiled

Exit status 1 when a check failed (the RESULT: lines say which).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "bench" / "cluster")]  # tests/ helpers; scaling.py for the precision stage


def environment() -> bool:
    print(f"RESULT: python {platform.python_version()}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    if not torch.cuda.is_available():
        from trainyard.artifact.device import gpu_problem

        print(f"RESULT: no CUDA: {gpu_problem()}")
        return True
    nccl = torch.cuda.nccl.version() if hasattr(torch.cuda, "nccl") else "?"
    print(f"RESULT: NCCL {'.'.join(map(str, nccl)) if isinstance(nccl, tuple) else nccl}, driver {_driver()}, "
          f"{torch.cuda.device_count()} device(s)")
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        print(f"RESULT: cuda:{i} {p.name}, capability {p.major}.{p.minor}, {p.total_memory / 2**30:.0f} GiB, "
              f"{p.multi_processor_count} SMs, bf16 native: {(p.major, p.minor) >= (8, 0)}")
    return True


def _driver() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception as exc:
        return f"unknown ({exc})"


def nvml() -> bool:
    from trainyard.jobs.scheduling.resources import Pools, gpu_inventory
    from trainyard.jobs.views.hardware import GpuMonitor

    inventory = gpu_inventory()
    readings = GpuMonitor().sample()
    for gpu, reading in zip(inventory, readings):
        print(f"RESULT: {gpu.label} {gpu.uuid}: {reading['utilization']} % busy, "
              f"{(reading['memory_used'] or 0) / 2**20:.0f} MiB used, {reading['temperature']} C, "
              f"{reading['power']} W of {reading['power_limit']} W")
    ok = len(inventory) == len(readings) == torch.cuda.device_count() > 0
    env = {**os.environ, **Pools(1, 1, inventory).environment([len(inventory) - 1])}
    probe = "import torch; print(torch.cuda.device_count(), str(torch.cuda.get_device_properties(0).uuid))"
    seen = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    leased_uuid = inventory[-1].uuid if inventory else "-"
    same = seen.returncode == 0 and leased_uuid.removeprefix("GPU-") in seen.stdout
    print(f"RESULT: inventory {len(inventory)}, monitor {len(readings)}, torch {torch.cuda.device_count()}; "
          f"lease of gpu:{len(inventory) - 1} as {env['CUDA_VISIBLE_DEVICES']} -> child sees "
          f"{seen.stdout.strip() or seen.stderr.strip()[-200:]}: {'same device' if same else 'MISMATCH'}")
    return ok and same


def export_resume() -> bool:
    from tests.training.model_helpers import make_dataset, metrics, model_spec
    from trainyard.core.events import EventWriter
    from trainyard.core.paths import checkpoint_name
    from trainyard.inference.export import export_model
    from trainyard.inference.loader import load_model
    from trainyard.training.loop import train

    root = Path(tempfile.mkdtemp())
    dataset = make_dataset(root / "ds", train=256, val=64, size=32, channels=3)
    spec = model_spec(dataset, network="resnet18", epochs=2, batch_size=32, snapshot_interval=1, val_interval=1)
    gpu_job = root / "gpu"
    with EventWriter(gpu_job) as events:
        train(spec, gpu_job, events)
    on_gpu = "on cuda" in (gpu_job / "log.txt").read_text()
    export_model(gpu_job, 2, root / "model.tar.gz")
    exported = (root / "model.tar.gz").stat().st_size
    checkpoint = gpu_job / "checkpoints" / checkpoint_name(2)
    inputs = np.random.default_rng(0).standard_normal((8, 3, 32, 32)).astype(np.float32)
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU only to try the stage out
    gpu_logits = load_model(checkpoint, device).logits(inputs)
    cpu_logits = load_model(checkpoint, "cpu").logits(inputs)
    gap = float(np.abs(gpu_logits - cpu_logits).max())
    print(f"RESULT: trained on the GPU: {on_gpu}; exported {exported / 2**20:.1f} MiB; "
          f"GPU vs CPU logits: largest difference {gap:.2e}, same top-1: "
          f"{bool((gpu_logits.argmax(1) == cpu_logits.argmax(1)).all())}")
    cpu_job = root / "cpu"
    (cpu_job / "checkpoints").mkdir(parents=True)
    (cpu_job / "spec.json").write_text(spec.model_dump_json())
    shutil.copy(gpu_job / "checkpoints" / checkpoint_name(1), cpu_job / "checkpoints")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    env.pop("TRAINYARD_LEASED_GPUS", None)
    code = subprocess.call([sys.executable, "-m", "trainyard.training.run", str(cpu_job)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=300)
    resumed = "resuming from" in (cpu_job / "log.txt").read_text() and "on cpu" in (cpu_job / "log.txt").read_text()
    gpu_acc = metrics(gpu_job, "val_accuracy")[-1][1]
    cpu_acc = (metrics(cpu_job, "val_accuracy") or [(None, None)])[-1][1]
    print(f"RESULT: CPU resume of the epoch-1 GPU checkpoint: exit {code}, resumed on the CPU: {resumed}; "
          f"val accuracy at epoch 2: GPU {gpu_acc}, CPU-resumed {cpu_acc} (not bit-exact across devices)")
    return on_gpu and gap < 1e-2 and code == 0 and resumed


def precision() -> bool:
    from scaling import job_facts, losses, run_job, throughput, write_dataset

    from trainyard.training.spec import ModelSpec

    root = Path(tempfile.mkdtemp())
    images, batch, warmup, steps = 1536, 128, 5, 20
    dataset = write_dataset(root / "dataset", images, 128, 3)
    per_epoch = images // batch
    ok = True
    for precision, compiled in (("fp32", False), ("bf16", False), ("fp16", False), ("auto", True)):
        spec = ModelSpec(dataset_id="bench", dataset_dir=str(dataset), network="resnet18", batch_size=batch,
                         crop=112, epochs=(steps + warmup) / per_epoch, seed=0, val_interval=0,
                         snapshot_interval=0, precision=precision, compile=compiled,
                         lr={"policy": "fixed", "base_lr": 0.01})
        name = f"{precision}{'-compile' if compiled else ''}"
        try:
            job = run_job(root, name, spec, 1)
        except SystemExit as exc:
            print(f"RESULT: resnet18 b{batch} {name}: FAILED {str(exc).splitlines()[0]}")
            ok = False
            continue
        rate = throughput(job, per_epoch, batch, warmup)
        facts = job_facts(job)
        print(f"RESULT: resnet18 b{batch} {name}: {rate:.0f} images/s, last loss {losses(job)[-1]:.3f}, "
              f"{json.dumps(facts)}")
        ok = ok and np.isfinite(losses(job)[-1])
    return ok


STAGES = {"environment": environment, "nvml": nvml, "export-resume": export_resume, "precision": precision}

if __name__ == "__main__":
    sys.exit(0 if STAGES[sys.argv[1]]() else 1)
