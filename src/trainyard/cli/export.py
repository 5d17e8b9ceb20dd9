"""``trainyard export`` (a model as a deployable archive) and ``trainyard import`` (the reverse)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from trainyard.cli.epochs import chosen_epoch, epoch_option
from trainyard.cli.known_jobs import refuse_unknown
from trainyard.cli.output import emit_json, err, fail
from trainyard.core.errors import NotFound

if TYPE_CHECKING:
    from trainyard.inference.export import ExportResult


def export(
    model: str = typer.Argument(..., help="model job id"),
    output: Path = typer.Option(..., "--output", "-o", help="the .tar.gz to write"),
    epoch: str | None = epoch_option(),
    as_json: bool = typer.Option(False, "--json", help="print what was written as JSON"),
    fmt: str = typer.Option("onnx", "--format", "-f", help="onnx, onnx-int8, openvino, torchscript, executorch, "
                            "coreml, coreml-fp16, tflite or tensorrt (those not installed are refused, naming what "
                            "to install)"),
    calibration_images: int = typer.Option(200, "--calibration-images", min=1,
                                           help="training images an int8 export calibrates on"),
    force: bool = typer.Option(False, "--force", help="ship a copy beyond tolerance (an int8 accuracy drop, a "
                               "detector's ONNX disagreement), its measured difference in the manifest"),
) -> None:
    """Write one archive that runs the model anywhere: its network in one format (ONNX by default, checked
    against PyTorch), safetensors, labels, mean, scripts."""
    refuse_unknown(model, f"no model with id {model!r}")  # before torch and the store load
    from trainyard.artifact.checkpoint import CheckpointError
    from trainyard.cli.context import cli_context
    from trainyard.cli.export_format import export_chosen, print_figures
    from trainyard.inference.exporters import FormatRefused
    from trainyard.inference.onnx_export import ExportError
    from trainyard.jobs.store.confinement import recorded_user_code

    ctx = cli_context()
    job = ctx.store.get_job(model)
    if job is None or job.kind != "model":
        raise NotFound(f"no model with id {model!r}")
    chosen = chosen_epoch(model, ctx.manager.folder(model).path, epoch)
    confined = recorded_user_code(ctx, model)
    manifest: dict = {}
    try:
        if confined and fmt == "onnx":  # user code: built in a sandboxed child, never here
            result = _export_confined(ctx.manager.folder(model).path, chosen, output, force)
        else:
            result = export_chosen(ctx.manager.folder(model).path, chosen, output, fmt, confined=confined,
                                   calibration_images=calibration_images, force=force)
            manifest = result.manifest
    except FormatRefused as exc:  # exit 2: not this format, here
        fail(f"model {model}: {exc}", 2)
    except CheckpointError as exc:  # the same kind, saying which model
        raise CheckpointError(f"model {model}: {exc}") from None
    except ExportError as exc:  # exit 1, not 2: the model, not the command, is at fault
        fail(f"model {model} cannot be exported: {exc}")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    doc = {**manifest, "path": str(result.path), "epoch": result.epoch, "bytes": result.size,
           "members": result.members, "onnx_check": result.check}
    if as_json:
        emit_json(doc)
    else:
        err.print(f"wrote {result.path} ({result.size / 2**20:.1f} MiB), epoch {result.epoch:g}"
                  f"{_checked(result.check)}")
        if manifest:
            print_figures(manifest)


# The figure that says how close ONNX Runtime came to PyTorch, per kind of check (its words, its key).
CHECK_FIGURES = (("max_abs_diff", "logits"), ("max_box_diff", "boxes (pixels)"))


def _checked(check: dict) -> str:
    """The check's figures in words; a classifier's and a detector's name their figures differently."""
    if not check:
        return " (checked against PyTorch in its sandbox)"
    if check.get("forced") and check.get("unmatched_boxes"):
        return (f"; FORCED: ONNX Runtime and PyTorch disagree on {check['unmatched_boxes']} boxes "
                "(recorded in info.json's onnx_check)")
    for key, what in CHECK_FIGURES:
        if key in check:
            return f"; ONNX Runtime matches PyTorch within {check[key]:.2g} on the {what}"
    return "; checked against PyTorch"


def _export_confined(job_dir: Path, epoch: float | None, output: Path, force: bool = False) -> ExportResult:
    """The archive of a custom network's model, written by the sandboxed export child
    (inference/export_isolated.py) as the server writes it; described from the archive."""
    import tarfile

    from trainyard.inference.export import ExportResult
    from trainyard.inference.export_isolated import export_in_child
    from trainyard.inference.snapshots import model_checkpoint

    epoch, _ = model_checkpoint(job_dir, epoch)
    export_in_child(job_dir, epoch, output, force=force)
    with tarfile.open(output, "r:gz") as tar:
        members = tar.getnames()
    return ExportResult(path=output, epoch=epoch, size=output.stat().st_size, members=members)


def import_archive(
    archive: Path = typer.Argument(..., help="an archive downloaded from trainyard (.tar.gz)"),
    name: str | None = typer.Option(None, help="job name (default: the exported job's)"),
    as_json: bool = typer.Option(False, "--json", help="print the new model job as JSON"),
) -> None:
    """Import an exported archive as a model, to classify with or fine-tune from (--pretrained)."""
    from trainyard.cli.context import cli_context
    from trainyard.cli.remote_check import server_running, use_server_checker
    from trainyard.jobs.kinds.imported import import_model_archive
    from trainyard.jobs.views.documents import job_detail

    if not archive.is_file():
        raise NotFound(f"{archive} is not a file")
    ctx = cli_context()
    # A status line, not silence: what follows takes seconds (issue 31.3).
    if server_running(ctx.settings):  # its warm checker answers for network.py
        use_server_checker(ctx.settings, lambda line: err.print(line, soft_wrap=True))
        err.print(f"importing {archive.name}: the running server checks its network; writing the model loads "
                  "torch here (some seconds)", soft_wrap=True)
    else:
        err.print(f"importing {archive.name}: no `trainyard serve` runs, so this loads torch here, and a custom "
                  "network.py starts a sandboxed checker of its own (some seconds each)", soft_wrap=True)
    job = import_model_archive(ctx, archive, name)
    if as_json:
        emit_json(job_detail(ctx.manager, job))
    else:
        err.print(f"[green]imported {archive.name} as model {job.id}[/green] ({job.name})")

