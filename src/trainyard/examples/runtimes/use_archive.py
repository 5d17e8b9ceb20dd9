#!/usr/bin/env python3
"""Classify images with a trainyard archive exported to TorchScript, OpenVINO, ExecuTorch or Core ML.

    python use_archive.py MODEL.tar.gz IMAGE... [--batch-size N] [--top 5] [--json]
                          [--compute-units cpu_only]     # Core ML only

Needs numpy, Pillow and the runtime of the archive's copy, found by its model file (RUNTIMES):

    model.pt                TorchScript: ``pip install torch``
    model.xml + model.bin   OpenVINO IR, compiled for the CPU with the f32 precision hint, as the
                            export's check ran it (a CPU with AMX would otherwise run it in bf16)
    model.pte               ExecuTorch, its network lowered to XNNPACK; one image at a time (it was
                            lowered for batch 1). Its Python runtime takes and returns torch
                            tensors (its wheel brings PyTorch's libraries); on a device, ExecuTorch's
                            C++ runtime runs model.pte alone, with this preprocessing.
    model.mlpackage.zip     Core ML ML Program, one image at a time. Core ML runs models only on
                            Apple machines: coremltools' MLModel.predict needs macOS (on iOS, load
                            model.mlpackage with Core ML itself and prepare images as example.py
                            does). It runs on the CPU by default, as the export's check ran it;
                            ``--compute-units all`` lets Core ML choose the GPU or the Neural Engine,
                            whose fp16 arithmetic differs slightly.

Reads the model file(s), labels.txt, mean.npy, preprocess.json and example.py from the archive (or
its unpacked folder) in memory. example.py's preprocessing is the one the ONNX archive ships; its
ONNX Runtime import is satisfied by an empty stand-in, since only its numpy and Pillow functions
run here. Only the chosen runtime is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import sys
import tarfile
import tempfile
import types
import warnings
import zipfile
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

COMMON = ("labels.txt", "mean.npy", "preprocess.json", "example.py")
UNITS = {"cpu_only": "CPU_ONLY", "cpu_and_gpu": "CPU_AND_GPU", "cpu_and_ne": "CPU_AND_NE", "all": "ALL"}
Run = Callable[[np.ndarray], np.ndarray]  # a preprocessed batch (N, C, h, w) float32 -> logits (N, K)


def _torchscript(torch, files: dict[str, bytes], args, stack) -> Run:
    model = torch.jit.load(io.BytesIO(files["model.pt"]), map_location="cpu").eval()

    def run(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model(torch.from_numpy(x)).numpy()
    return run


def _openvino(ov, files: dict[str, bytes], args, stack) -> Run:
    core = ov.Core()
    model = core.read_model(files["model.xml"].decode(), ov.Tensor(np.frombuffer(files["model.bin"], np.uint8).copy()))
    request = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
    return lambda x: np.array(request.infer([x])[0])


def _executorch(runtime, files: dict[str, bytes], args, stack) -> Run:
    import torch  # ExecuTorch's Python runtime takes and returns torch tensors

    method = runtime.Runtime.get().load_program(files["model.pte"]).load_method("forward")

    def run(x: np.ndarray) -> np.ndarray:
        # The program takes one image (batch 1, as it was lowered): run each in turn.
        images = torch.from_numpy(x)
        return np.concatenate([method.execute([images[i:i + 1]])[0].numpy() for i in range(len(images))])
    return run


def _coreml(ct, files: dict[str, bytes], args, stack) -> Run:
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="trainyard-coreml-"))
    with zipfile.ZipFile(io.BytesIO(files["model.mlpackage.zip"])) as package:
        package.extractall(folder)
    model = ct.models.MLModel(os.path.join(folder, "model.mlpackage"),
                              compute_units=getattr(ct.ComputeUnit, UNITS[args.compute_units]))
    # The package takes one image (batch 1, as it was converted): run each in turn.
    return lambda x: np.concatenate([np.asarray(model.predict({"input": x[i:i + 1]})["logits"])
                                     for i in range(len(x))])


class Runtime(NamedTuple):
    files: tuple[str, ...]  # the model file(s) that name this runtime's archive
    module: str  # what it imports
    pip: str  # how to install it
    build: Callable  # (module, members, args, ExitStack) -> Run
    apple_only: bool = False


RUNTIMES = {
    "TorchScript": Runtime(("model.pt",), "torch", "pip install torch numpy pillow", _torchscript),
    "OpenVINO": Runtime(("model.xml", "model.bin"), "openvino", "pip install openvino numpy pillow", _openvino),
    "ExecuTorch": Runtime(("model.pte",), "executorch.runtime", "pip install executorch numpy pillow", _executorch),
    "Core ML": Runtime(("model.mlpackage.zip",), "coremltools", "pip install coremltools numpy pillow (on a Mac)",
                       _coreml, apple_only=True),
}
WANTED = {*COMMON, *(name for runtime in RUNTIMES.values() for name in runtime.files)}


def read_members(archive: str) -> dict[str, bytes]:
    """{base name: bytes} of the regular files this script may need."""
    found: dict[str, bytes] = {}
    if os.path.isdir(archive):
        for name in sorted(WANTED):
            path = os.path.join(archive, name)
            if os.path.isfile(path):
                with open(path, "rb") as file:
                    found[name] = file.read()
        return found
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar.getmembers():
                base = os.path.basename(member.name)
                if member.isfile() and base in WANTED and base not in found:
                    extracted = tar.extractfile(member)
                    if extracted is not None:
                        found[base] = extracted.read()
    except (tarfile.TarError, EOFError, OSError) as exc:  # not a tar, or cut short in the download
        raise SystemExit(f"{archive} is not a trainyard model archive ({exc})") from None
    return found


def runtime_of(archive: str, files: dict[str, bytes]) -> str:
    """The name of the runtime whose model file the archive holds, its other members checked."""
    for name, runtime in RUNTIMES.items():
        if runtime.files[0] in files:
            missing = [member for member in (*runtime.files, *COMMON) if member not in files]
            if missing:
                raise SystemExit(f"{archive} is not a trainyard {name} archive (missing {', '.join(missing)})")
            return name
    models = ", ".join(" + ".join(runtime.files) for runtime in RUNTIMES.values())
    raise SystemExit(f"{archive} holds no model this script runs (one of {models}); "
                     "an archive with model.onnx has its own use_archive.py")


def load_runtime(name: str):
    """The runtime's module, imported only now (ExecuTorch's "experimental API" notice silenced)."""
    runtime = RUNTIMES[name]
    if runtime.apple_only and sys.platform != "darwin":
        raise SystemExit(f"Core ML runs models only on Apple machines (macOS), not on {sys.platform}: "
                         "run this script on a Mac, or export to onnx, openvino or executorch for this machine")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(runtime.module)
    except ImportError as exc:
        raise SystemExit(f"this {name} archive needs {runtime.module.split('.')[0]} ({exc}): {runtime.pip}") from None


def load_example(source: bytes) -> types.ModuleType:
    """example.py as a module, without ONNX Runtime (none of what runs here needs it)."""
    sys.modules.setdefault("onnxruntime", types.ModuleType("onnxruntime"))
    module = types.ModuleType("trainyard_archive_example")
    module.__file__ = "example.py"
    exec(compile(source, "example.py", "exec"), module.__dict__)
    return module


def classifier(files: dict[str, bytes], example: types.ModuleType, run: Run):
    """example.py's Classifier with ``run`` in place of the ONNX session."""
    classifier_base: Any = example.Classifier  # a class of example.py, known only once it is loaded

    class ArchiveClassifier(classifier_base):
        def __init__(self) -> None:
            self.labels = example.parse_labels(files["labels.txt"].decode("utf-8"))
            self.prep = json.loads(files["preprocess.json"])
            self.mean = example.mean_input(np.load(io.BytesIO(files["mean.npy"]), allow_pickle=False), self.prep)
            self.thresholds = self.prep.get("thresholds")  # example.Classifier.classify reads it

        def probabilities(self, images):
            logits = run(example.preprocess(images, self.prep, self.mean))
            return example.softmax(logits) if self.thresholds is None else example.sigmoid(logits)
    return ArchiveClassifier()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Classify images with a trainyard TorchScript, OpenVINO, ExecuTorch or Core ML archive.")
    parser.add_argument("archive", help="the .tar.gz exported by trainyard, or its unpacked folder")
    parser.add_argument("images", nargs="+", help="image files")
    parser.add_argument("--batch-size", type=int, default=32, help="images read at a time")
    parser.add_argument("--top", type=int, default=5, help="predictions per image")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--compute-units", choices=sorted(UNITS), default="cpu_only",
                        help="Core ML only: where it runs the model (cpu_only: as the export's check did)")
    args = parser.parse_args(argv)
    missing = [path for path in [args.archive, *args.images] if not os.path.exists(path)]
    if missing:
        raise SystemExit(f"no such file: {', '.join(missing)}")
    files = read_members(args.archive)
    name = runtime_of(args.archive, files)
    module = load_runtime(name)
    example = load_example(files["example.py"])
    with contextlib.ExitStack() as stack:
        run = RUNTIMES[name].build(module, files, args, stack)
        try:
            results = classifier(files, example, run).classify(args.images, max(1, args.batch_size), args.top)
        except OSError as exc:
            raise SystemExit(f"cannot read an image: {exc}") from None
    example.print_results(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
