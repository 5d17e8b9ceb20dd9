"""One format's archive: today's archive (inference/export.py) with the format's copy of the
network in place of model.onnx, and manifest.json, the export-time check's figures.

info.json's checksums and its ``export`` entry follow the copy, so `trainyard import` and a
reader of the archive see what it holds. The archive is written atomically after the check.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from trainyard.artifact.checkpoint import (
    CheckpointHeader,
    build_model_from_checkpoint,
    checkpoint_for_epoch,
    load_checkpoint,
)
from trainyard.core.files import write_atomic
from trainyard.inference import export
from trainyard.inference.archive_readme import archive_stem
from trainyard.inference.exporters import figures
from trainyard.inference.exporters.base import Conversion, Converted, Exporter, FormatRefused, ort_runner

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "trainyard-export/1"


@dataclass
class FormatExport:
    """An archive written by `export_format`."""

    path: Path
    epoch: float
    size: int
    members: list[str] = field(default_factory=list)
    check: dict = field(default_factory=dict)  # the fp32 ONNX check (inference/export.py's)
    manifest: dict = field(default_factory=dict)  # this format's figures


def export_format(job_dir: str | os.PathLike, epoch: float | None, chosen: Exporter, output: str | os.PathLike,
                  *, calibration_images: int = 200, force: bool = False) -> FormatExport:
    """Write ``chosen``'s archive of ``epoch`` (None: the latest) of the model job in ``job_dir``."""
    chosen.require_runtime()
    checkpoint_path = checkpoint_for_epoch(job_dir, epoch)
    checkpoint = load_checkpoint(checkpoint_path)
    task = CheckpointHeader.of(checkpoint).task
    if task not in chosen.tasks:
        raise FormatRefused(f"the {chosen.name} format takes {' and '.join(chosen.tasks)} models, not {task}")
    members, check = export.archive_members(checkpoint, checkpoint_path, force)
    files = {name: data for name, data, _ in members}
    model = build_model_from_checkpoint(checkpoint)
    started = time.perf_counter()
    converted = chosen.convert(Conversion(checkpoint, checkpoint_path, model, files["model.onnx"],
                                          figures.calibration_source(checkpoint), calibration_images))
    manifest = {"format": MANIFEST_FORMAT, "export_format": chosen.name, **converted.details,
                "conversion_s": round(time.perf_counter() - started, 3),
                "size_bytes": converted.size_bytes,
                "reference_size_bytes": len(files["model.onnx"]),
                "onnx_check": check}
    measure = MEASURES.get(task)
    if measure is not None:
        manifest.update(measure(checkpoint, model, files["model.onnx"], converted))
    if chosen.int8:
        figures.judge_int8(manifest, force)
    final = _with_copy(members, converted, manifest)
    top = archive_stem(checkpoint)
    write_atomic(output, lambda f: export.write_tar_gz(f, top, final, int(checkpoint_path.stat().st_mtime)))
    return FormatExport(Path(output), CheckpointHeader.of(checkpoint).epoch, Path(output).stat().st_size,
                        [f"{top}/{name}" for name, _, _ in final], check, manifest)


def measure_classifier(checkpoint: dict, model: torch.nn.Module, reference: bytes, converted: Converted) -> dict:
    """The classification figures (figures.py) of the copy, and both latencies; where this machine
    cannot run the copy, ``checked: false`` and why, and no figure that was not measured."""
    if converted.run is None:
        return {"checked": False, "not_checked_because": converted.not_checked_because}
    x, labels, source = figures.check_inputs(checkpoint)
    expected = figures.logits(figures.torch_runner(model), x)
    doc = figures.compare(expected, figures.logits(converted.run, x), labels)
    doc.update(checked=True, check_data=source, latency_ms=figures.latency_ms(converted.run, x),
               reference_latency_ms=figures.latency_ms(ort_runner(reference), x), threads=1)
    return doc


MEASURES: dict[str, Callable[[dict, torch.nn.Module, bytes, Converted], dict]] = {"classification": measure_classifier}


def _with_copy(members: list[tuple[str, bytes, int]], converted: Converted,
               manifest: dict) -> list[tuple[str, bytes, int]]:
    """The archive's members with the copy in place of model.onnx, info.json following it, and
    manifest.json last."""
    out = []
    for name, data, mode in members:
        if name == "model.onnx":
            name, data = converted.name, converted.data
        elif name in converted.replaces:
            data = converted.replaces[name]
        elif name == "README.md":
            data += _format_section(manifest).encode()
        elif name == "info.json":
            described = json.loads(data)  # the archive's own info.json: its files' hashes
            described["sha256"].pop("model.onnx", None)
            described["sha256"].update({converted.name: _sha256(converted.data),
                                        **{n: _sha256(d) for n, d in converted.replaces.items()}})
            described["export"] = manifest
            data = export._json(described)
        out.append((name, data, mode))
    added = [(name, data, 0o644) for name, data in converted.replaces.items() if name not in {m[0] for m in out}]
    return [*out, *added, (MANIFEST, export._json(manifest), 0o644)]


def _format_section(manifest: dict) -> str:
    """The README's last section: which copy this is and how close it came to PyTorch."""
    agreement = manifest.get("top1_agreement")
    measured = (f"top-1 agreement {agreement:.3f} and largest logit difference {manifest['max_logit_diff']:.3g} "
                f"on {manifest['images']} {manifest['check_data']} images; " if agreement is not None else "")
    checked = ("Checked against PyTorch when it was exported: " if manifest.get("checked", True) else
               f"NOT checked against PyTorch ({manifest['not_checked_because']}): ")
    return (f"\n## This copy: {manifest['export_format']} ({manifest['precision']})\n\n"
            f"{checked}{measured}{manifest['size_bytes']} bytes beside the "
            f"fp32 graph's {manifest['reference_size_bytes']}. Every figure, latency at one thread included, is in "
            f"{MANIFEST}. The scripts above run it unchanged.\n")


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()
