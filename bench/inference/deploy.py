"""Benchmark deployment: ONNX Runtime against PyTorch eager, and the archive against the checkpoint.

Builds a checkpoint of a standard network as training writes it (weights, SGD momentum, RNG
state, preprocessing with a 256x256 mean image and a centre crop), exports the deployable
archive, and prints in one run:

- latency of one image and of a batch of 32 in PyTorch eager (inference mode) and in ONNX Runtime
  (the archive's model.onnx), median of --rounds runs after warm-up, on the CPU (and on the GPU
  too when PyTorch sees one and onnxruntime has the CUDA provider);
- the size of the archive against the size of the checkpoint, and how long the export took.

    python bench/inference/deploy.py                      # googlenet
    python bench/inference/deploy.py --network alexnet --rounds 5
    python bench/inference/deploy.py --threads 1          # a machine busy with other work
"""

from __future__ import annotations

import argparse
import json
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from trainyard.artifact.checkpoint import build_model_from_checkpoint, save_checkpoint
from trainyard.artifact.network import create_model
from trainyard.core.paths import checkpoint_name
from trainyard.inference.export import export_model
from trainyard.networks import get_network
from trainyard.training.state import rng_state

STORED = 256  # stored image size; the network sees its own size, centre-cropped


def make_checkpoint(job_dir: Path, network: str, classes: int) -> Path:
    """A checkpoint like one a training job writes after its first epoch."""
    size = get_network(network).image_size
    stored = max(STORED, size)
    torch.manual_seed(0)
    model = create_model(network, None, classes, 3, size)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    out = model(torch.rand(2, 3, size, size))
    out = out[0] if isinstance(out, (tuple, list)) else out
    out.sum().backward()
    optimizer.step()  # fills the momentum buffers: a real checkpoint carries them
    mean = torch.from_numpy(np.random.default_rng(0).uniform(90, 160, (stored, stored, 3)).astype(np.float32))
    checkpoint = {
        "model": model.state_dict(), "network": network, "network_source": None,
        "classes": [f"class{i}" for i in range(classes)], "image_size": size,
        "preprocess": {"width": stored, "height": stored, "channels": 3, "resize": "squash",
                       "mean_mode": "image", "crop": size if size != stored else None, "scale": "0..1",
                       "mean": mean},
        "optimizer": optimizer.state_dict(), "scheduler": None, "scaler": None, "rng": rng_state(0),
        "epoch": 1, "iteration": 1, "batches": 1, "metrics": {}, "best": None, "trainable": None,
        "spec": {"id": "bench", "name": f"bench-{network}", "dataset_id": "none"},
    }
    return save_checkpoint(job_dir / "checkpoints" / checkpoint_name(1), checkpoint)


def median_ms(run, rounds: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def torch_runner(model: torch.nn.Module, x: torch.Tensor, device: str):
    model = model.to(device)
    x = x.to(device)

    def run():
        with torch.inference_mode():
            model(x)
        if device == "cuda":
            torch.cuda.synchronize()  # time the work, not the launch
    return run


def ort_runner(onnx_bytes: bytes, x: np.ndarray, provider: str):
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()  # the same CPU threads as PyTorch
    session = ort.InferenceSession(onnx_bytes, options, providers=[provider])
    name = session.get_inputs()[0].name
    return lambda: session.run(None, {name: x})


def devices() -> list[tuple[str, str]]:
    """(torch device, onnxruntime provider) pairs to measure."""
    pairs = [("cpu", "CPUExecutionProvider")]
    if torch.cuda.is_available() and "CUDAExecutionProvider" in ort.get_available_providers():
        pairs.append(("cuda", "CUDAExecutionProvider"))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", default="googlenet")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10, help="timed runs per figure (median)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for both runtimes (default: PyTorch's, one per core); on a "
                             "busy machine 1 avoids measuring thread contention instead of the runtimes")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="trainyard-bench-deploy-") as tmp:
        job = Path(tmp) / "job"
        checkpoint_path = make_checkpoint(job, args.network, args.classes)
        start = time.perf_counter()
        result = export_model(job, None, Path(tmp) / "model.tar.gz")
        export_s = time.perf_counter() - start
        with tarfile.open(result.path) as tar:
            onnx_bytes = tar.extractfile(next(m for m in tar if m.name.endswith("/model.onnx"))).read()
        model = build_model_from_checkpoint(torch.load(checkpoint_path, weights_only=True))
        size = get_network(args.network).image_size
        figures = {"network": args.network, "classes": args.classes, "input": [3, size, size],
                   "checkpoint_bytes": checkpoint_path.stat().st_size, "archive_bytes": result.size,
                   "export_seconds": round(export_s, 2), "onnx_check": result.check, "latency_ms": {}}
        for device, provider in devices():
            for batch in (1, 32):
                x = torch.rand(batch, 3, size, size) * 2 - 1
                rounds = args.rounds if batch == 1 or device == "cuda" else max(3, args.rounds // 3)
                eager = median_ms(torch_runner(model, x, device), rounds)
                onnx = median_ms(ort_runner(onnx_bytes, x.numpy(), provider), rounds)
                figures["latency_ms"][f"{device} batch {batch}"] = {"pytorch_eager": round(eager, 2),
                                                                    "onnxruntime": round(onnx, 2)}
        report(figures)
        if args.json:
            print(json.dumps(figures, indent=2))


def report(f: dict) -> None:
    print(f"{f['network']} ({f['classes']} classes, input {'x'.join(map(str, f['input']))}), "
          f"torch {torch.__version__}, onnxruntime {ort.__version__}, {torch.get_num_threads()} threads")
    print(f"{'':16} {'PyTorch eager':>14} {'ONNX Runtime':>14} {'speed-up':>9}   per image (ORT)")
    for name, row in f["latency_ms"].items():
        batch = int(name.split()[-1])
        print(f"{name:16} {row['pytorch_eager']:>11.2f} ms {row['onnxruntime']:>11.2f} ms "
              f"{row['pytorch_eager'] / row['onnxruntime']:>8.2f}x   {row['onnxruntime'] / batch:.2f} ms")
    mib = 2**20
    print(f"checkpoint {f['checkpoint_bytes'] / mib:.1f} MiB (weights + optimizer state), archive "
          f"{f['archive_bytes'] / mib:.1f} MiB (ONNX + safetensors + scripts, gzip): "
          f"{f['archive_bytes'] / f['checkpoint_bytes']:.2f}x; export with ONNX check {f['export_seconds']} s, "
          f"ONNX vs PyTorch max |diff| {f['onnx_check']['max_abs_diff']:.2g}")


if __name__ == "__main__":
    main()
