"""Benchmark the export formats (inference/exporters): per format and network, the copy's size,
latency per image at one thread beside the fp32 ONNX graph's, top-1 agreement and largest logit
difference with PyTorch, and the conversion time.

The networks are freshly initialised (no dataset, no training): inputs and int8 calibration are
fixed pseudo-random images in the preprocessed range, so agreement here is a lower bound (an
untrained network's logits are close together; a trained one's answers are far more stable).

    python bench/inference/export_formats.py                                  # lenet 28², resnet18 224²
    python bench/inference/export_formats.py --networks lenet:28 --images 64
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import torch

from trainyard.artifact.network import create_model
from trainyard.inference import onnx_export
from trainyard.inference.exporters import FORMATS, figures
from trainyard.inference.exporters.base import Conversion, ort_runner


def checkpoint(network: str, size: int, classes: int) -> dict:
    """The checkpoint entries a converter reads (the input shape)."""
    return {"network": network, "classes": [str(i) for i in range(classes)], "image_size": size,
            "preprocess": {"width": size, "height": size, "channels": 3, "resize": "squash", "mean_mode": "none",
                           "crop": None, "scale": "0..1", "mean": None}}


def bench(network: str, size: int, args: argparse.Namespace) -> list[str]:
    torch.manual_seed(0)
    model = create_model(network, None, args.classes, 3, size).eval()
    shape = (3, size, size)
    fp32 = onnx_export.export_onnx(model, shape)
    x = onnx_export.sample_inputs(shape, args.images, seed=1).numpy()
    expected = figures.logits(figures.torch_runner(model), x)
    reference_latency = figures.latency_ms(ort_runner(fp32), x)
    rows = []
    for name, exporter in FORMATS.items():
        if not exporter.runtime or not all(importlib.util.find_spec(m) for m in exporter.runtime):
            continue
        if args.formats and name not in args.formats:
            continue
        conversion = Conversion(checkpoint(network, size, args.classes), None, model, fp32,  # type: ignore[arg-type]
                                lambda n: onnx_export.sample_inputs(shape, n, seed=2).numpy(), args.calibration)
        start = time.perf_counter()
        converted = exporter.convert(conversion)
        seconds = time.perf_counter() - start
        if converted.run is None:  # converted, but this machine cannot run it (Core ML off macOS)
            rows.append(f"| {network} {size}² | {name} | {converted.size_bytes / 2**20:.2f} | "
                        f"{len(fp32) / 2**20:.2f} | not run here | {reference_latency:.2f} | not checked | "
                        f"not checked | {seconds:.1f} |")
            print(rows[-1], flush=True)
            continue
        found = figures.compare(expected, figures.logits(converted.run, x), None)
        rows.append(f"| {network} {size}² | {name} | {converted.size_bytes / 2**20:.2f} | {len(fp32) / 2**20:.2f} | "
                    f"{figures.latency_ms(converted.run, x):.2f} | {reference_latency:.2f} | "
                    f"{found['top1_agreement']:.3f} | {found['max_logit_diff']:.2g} | {seconds:.1f} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["lenet:28", "resnet18:224"], help="NAME:SIZE ...")
    parser.add_argument("--images", type=int, default=64, help="inputs compared (latency: the first 20)")
    parser.add_argument("--calibration", type=int, default=64, help="int8 calibration images")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--formats", nargs="*", default=[], help="only these formats (default: every one installed)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # PyTorch's reference logits; each copy runs on one thread of its own
    print("| network | format | MiB | fp32 MiB | ms/image (1 thread) | fp32 ONNX ms | top-1 agreement | "
          "max logit diff | conversion s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.networks:
        name, size = spec.split(":")
        bench(name, int(size), args)


if __name__ == "__main__":
    main()
