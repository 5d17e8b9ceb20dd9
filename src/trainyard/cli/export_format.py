"""``trainyard export --format F``: one format's archive (inference/exporters), its figures in words.

The default format, onnx, is today's archive with manifest.json added. A custom network's model
is exported in its sandbox (cli/export.py), in the onnx format only: the other formats convert
and measure the network outside it.
"""

from __future__ import annotations

from pathlib import Path

from trainyard.cli.output import err


def export_chosen(job_dir: Path, epoch: float | None, output: Path, fmt: str, *, confined: bool,
                  calibration_images: int, force: bool):
    """The FormatExport of ``fmt``; FormatRefused for a format this model or machine cannot take."""
    from trainyard.inference.exporters import DEFAULT_FORMAT, FormatRefused, exporter
    from trainyard.inference.exporters.archive import export_format

    chosen = exporter(fmt)
    if confined and chosen.name != DEFAULT_FORMAT:
        raise FormatRefused(f"a custom network's model exports to {DEFAULT_FORMAT} only (its code runs in a "
                            "sandbox, and the other formats convert it outside)")
    return export_format(job_dir, epoch, chosen, output, calibration_images=calibration_images, force=force)


def figures_line(manifest: dict) -> str:
    """The check's figures in one line: agreement, accuracy, size and latency beside fp32's."""
    parts = [manifest["export_format"]]
    if manifest.get("checked") is False:  # a copy this machine cannot run: no figure claimed
        parts.append(f"NOT checked against PyTorch: {manifest['not_checked_because']}")
    if manifest.get("top1_agreement") is not None:
        parts.append(f"top-1 agreement with PyTorch {manifest['top1_agreement']:.3f} on {manifest['images']} "
                     f"{manifest['check_data']} images, largest logit difference {manifest['max_logit_diff']:.2g}")
    if manifest.get("accuracy") is not None:
        parts.append(f"accuracy {manifest['accuracy']:.2f}% (PyTorch {manifest['accuracy_reference']:.2f}%)")
    parts.append(f"{manifest['size_bytes'] / 2**20:.2f} MiB (fp32 {manifest['reference_size_bytes'] / 2**20:.2f})")
    if manifest.get("latency_ms") is not None:
        parts.append(f"{manifest['latency_ms']:.2f} ms/image at 1 thread (fp32 {manifest['reference_latency_ms']:.2f})")
    if manifest.get("forced"):
        parts.append("FORCED beyond the int8 tolerance")
    return "; ".join(parts)


def print_figures(manifest: dict) -> None:
    err.print(figures_line(manifest), soft_wrap=True)
