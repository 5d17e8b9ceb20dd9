"""``trainyard classify MODEL IMAGE...`` and ``trainyard evaluate MODEL``.

MODEL is a model job id (its best snapshot, or ``--epoch``: a number or last) or, for classify, a checkpoint
file. Classify runs here when the snapshot's ONNX export is cached (inference/ort_runtime.py:
no torch, no uploads, the fastest way); otherwise it asks a running server when there is one
(cli/remote.py: the server keeps the model warm and exports it once), and runs here otherwise. Evaluate runs as a
foreground job recorded in the same store the server reads, so it also shows on the model's
classify page.
"""

from __future__ import annotations

from pathlib import Path

import typer

from trainyard.cli.context import cli_context
from trainyard.cli.epochs import chosen_epoch, epoch_option
from trainyard.cli.known_jobs import refuse_unknown
from trainyard.cli.output import emit_json, err, run_in_foreground
from trainyard.core.errors import NotFound, UserError
from trainyard.core.status import Status
from trainyard.core.tasks import task_traits

MAX_TOP = 100


def get_settings():
    from trainyard.settings import get_settings

    return get_settings()


def _load(model: str, epoch: float | None):
    """The loaded model of a job id or a checkpoint file; a UserError (one line, exit 2) otherwise."""
    from trainyard.inference.loader import InferenceError, load_model, model_checkpoint

    try:
        if _is_checkpoint_file(model):
            return load_model(model)
        ctx = cli_context()
        job = ctx.store.get_job(model)
        if job is None or job.kind != "model":
            raise NotFound(f"no model with id {model!r} (give a model job id, or a checkpoint .pt file)")
        _, path = model_checkpoint(ctx.manager.folder(job.id).path, epoch)
        return load_model(path)
    except InferenceError as exc:  # the same kind, saying which model
        raise type(exc)(f"model {model}: {exc}") from None


def classify(
    model: str = typer.Argument(..., help="model job id, or a checkpoint file"),
    images: list[Path] = typer.Argument(..., help="image files"),
    epoch: str | None = epoch_option(),
    top: int = typer.Option(5, min=1, max=MAX_TOP, help="classes to show per image"),
    as_json: bool = typer.Option(False, "--json", help='print {"results": [...]} on stdout'),
) -> None:
    """Classify images: the top classes with their confidences, preprocessed as in training."""
    if not _is_checkpoint_file(model):  # before torch, the store or a server is asked
        refuse_unknown(model, f"no model with id {model!r} (give a model job id, or a checkpoint .pt file)")
    from trainyard.cli.remote import classify_via_server

    chosen = None  # a checkpoint file has one
    if not _is_checkpoint_file(model) and Path(model).name == model:  # a job id: its snapshot, said once
        chosen = chosen_epoch(model, get_settings().jobs_dir / model, epoch)
    local = _is_checkpoint_file(model) or _exported(model, chosen)
    served = None if local else classify_via_server(get_settings(), model, images, top=top, epoch=chosen)
    results, problems = (served, {}) if served is not None else _classify_here(model, images, chosen, top)
    if as_json:
        good = iter(results)
        emit_json({"results": [problems[i] if i in problems else next(good) for i in range(len(images))]})
    else:
        for result in results:
            typer.echo(result["image"])
            if "labels" in result:  # a multi-label model: the labels over their thresholds
                typer.echo("  labels: " + (", ".join(f"{x['label']} ({x['score']:.3f})" for x in result["labels"])
                                           or "none"))
            for label, confidence in result["predictions"]:
                typer.echo(f"  {100 * confidence:6.2f}%  {label}")
    if problems:
        raise typer.Exit(1)


def _is_checkpoint_file(model: str) -> bool:
    return Path(model).suffix in (".pt", ".pth") and Path(model).is_file()


def _exported(model: str, epoch: float | None) -> bool:
    """Whether the snapshot of model job ``model`` has a fresh cached ONNX export: then this
    process classifies without torch, sooner than uploading the images to a server would."""
    from trainyard.inference import ort_runtime
    from trainyard.inference.snapshots import model_checkpoint

    if not model or Path(model).name != model:  # a job id, nothing that could leave the jobs folder
        return False
    try:
        return ort_runtime.is_cached(model_checkpoint(get_settings().jobs_dir / model, epoch)[1])
    except (OSError, UserError):  # no such job or snapshot: the usual path says so
        return False


BATCH = 64  # images decoded at once: memory stays flat however many images are given


def _classify_here(model: str, images: list[Path], epoch: float | None, top: int) -> tuple[list[dict], dict]:
    """(results of the readable images, {index: error result}), classified in this process a
    batch at a time, so only BATCH decoded images are held at once (results are a few bytes)."""
    from trainyard.datasets.images import ImageError
    from trainyard.inference.classify import load_for
    from trainyard.inference.responses import classify_named

    if not _is_checkpoint_file(model) and _recorded_custom(model):
        return _classify_confined(model, images, epoch, top)
    loaded = _load(model, epoch)
    results: list[dict] = []
    problems: dict[int, dict] = {}
    for start in range(0, len(images), BATCH):
        named = []
        for i, path in enumerate(images[start:start + BATCH], start):
            try:
                named.append((str(path), load_for(path, loaded.preprocess)))
            except ImageError as exc:
                problems[i] = {"image": str(path), "predictions": [], "error": str(exc)}
                err.print(f"[red]error:[/red] {path}: {exc}")
        if named:
            results += classify_named(loaded, named, top=top)
    return results, problems


def _recorded_custom(model: str) -> bool:
    """Whether the store recorded model job ``model``'s network as user code."""
    from trainyard.jobs.store.confinement import recorded_user_code

    return recorded_user_code(cli_context(), model)


def _classify_confined(model: str, images: list[Path], epoch: float | None, top: int) -> tuple[list[dict], dict]:
    """`_classify_here` for a custom network: built and run in its sandboxed model worker
    (inference/workers.py), as the server does, never in this process."""
    from trainyard.inference.snapshots import model_checkpoint
    from trainyard.inference.worker_pool import classify_checkpoint

    ctx = cli_context()
    _, path = model_checkpoint(ctx.manager.folder(model).path, epoch)
    readable, problems = [], {}
    for i, image in enumerate(images):
        try:
            readable.append((str(image), image.read_bytes()))
        except OSError as exc:
            problems[i] = {"image": str(image), "predictions": [], "error": exc.strerror or str(exc)}
            err.print(f"[red]error:[/red] {image}: {exc.strerror or exc}")
    if not readable:
        return [], problems
    doc = classify_checkpoint(path, readable, top=top, custom=True)
    return [{**result, "image": name} for result, (name, _) in zip(doc["results"], readable, strict=True)], problems


def evaluate(
    model: str = typer.Argument(..., help="model job id"),
    split: str = typer.Option("val", help="val | test"),
    epoch: str | None = epoch_option(),
    as_json: bool = typer.Option(False, "--json", help="print the evaluation on stdout"),
) -> None:
    """Evaluate a model on its dataset's validation or test split (a detector: mAP; a segmenter:
    mIoU)."""
    refuse_unknown(model, f"no model with id {model!r}")  # before the store and torch load
    from trainyard.inference.results import read_evaluation
    from trainyard.jobs.kinds.inference import create_inference_job

    ctx = cli_context()
    chosen = chosen_epoch(model, ctx.manager.folder(model).path, epoch)
    job = create_inference_job(ctx, "evaluate", model, epoch=chosen, split=split, foreground=True)
    job = run_in_foreground(ctx, job, quiet=as_json)
    if job.status != Status.DONE:
        raise typer.Exit(1)
    evaluation = read_evaluation(ctx.manager.folder(job.id).path)
    if evaluation is None:  # a done evaluate job wrote it; gone only if someone deleted it since
        raise UserError(f"evaluation job {job.id} finished but its results are missing")
    doc = {"job": job.id, "model": model, **evaluation}
    if as_json:
        emit_json(doc)
    else:
        _print_evaluation(doc)


def _print_evaluation(doc: dict) -> None:
    EVALUATION_PRINTERS[task_traits(doc.get("task")).name](doc)


def _print_classification(doc: dict) -> None:
    typer.echo(f"{doc['split']} split, epoch {doc['epoch']:g}: {doc['images']} images")
    typer.echo(f"accuracy {100 * doc['accuracy']:.2f}%   top-5 {100 * doc['top5_accuracy']:.2f}%")
    width = max(len(row["class"]) for row in doc["per_class"])
    typer.echo(f"{'class':<{width}}  precision  recall     f1  images")
    for row in doc["per_class"]:
        typer.echo(f"{row['class']:<{width}}  {row['precision']:9.3f}  {row['recall']:6.3f}  "
                   f"{row['f1']:5.3f}  {row['support']:6d}")
    for pair in doc["most_confused"][:5]:
        typer.echo(f"confused: {pair['count']} x {pair['true']} taken for {pair['predicted']}")



def _print_multilabel(doc: dict) -> None:
    typer.echo(f"{doc['split']} split, epoch {doc['epoch']:g}: {doc['images']} images")
    typer.echo(f"micro F1 {doc['micro_f1']:.3f}   macro F1 {doc['macro_f1']:.3f}   mAP {doc['map']:.3f}")
    width = max([len(row["label"]) for row in doc["per_label"]] + [5])
    typer.echo(f"{'label':<{width}}  precision  recall     f1     AP  threshold  images")
    for row in doc["per_label"]:
        typer.echo(f"{row['label']:<{width}}  {row['precision']:9.3f}  {row['recall']:6.3f}  {row['f1']:5.3f}  "
                   f"{row['ap']:5.3f}  {row['threshold']:9.2f}  {row['support']:6d}")


def _print_detection(doc: dict) -> None:
    typer.echo(f"{doc['split']} split, epoch {doc['epoch']:g}: {doc['images']} images")
    typer.echo(f"mAP@0.5 {doc['map50']:.3f}   mAP@0.5:0.95 {doc['map']:.3f}")
    width = max([len(row["class"]) for row in doc["per_class"]] + [5])
    typer.echo(f"{'class':<{width}}  AP@0.5  AP@0.5:0.95  boxes")
    for row in doc["per_class"]:
        typer.echo(f"{row['class']:<{width}}  {row['ap50']:6.3f}  {row['ap']:11.3f}  {row['boxes']:5d}")
    for row in doc["worst"][:5]:
        typer.echo(f"worst: image {row['index']} missed {row['missed']} of {row['boxes']} boxes, "
                   f"{row['false_positives']} false boxes (score >= {doc['miss_score']:g})")


def _print_segmentation(doc: dict) -> None:
    typer.echo(f"{doc['split']} split, epoch {doc['epoch']:g}: {doc['images']} images")
    typer.echo(f"mIoU {doc['miou']:.3f}   without background {doc['miou_no_background']:.3f}   "
               f"pixel accuracy {100 * doc['pixel_accuracy']:.2f}%")
    width = max([len(row["class"]) for row in doc["per_class"]] + [5])
    typer.echo(f"{'class':<{width}}     IoU  pixels")
    for row in doc["per_class"]:
        iou = "     –" if row["iou"] is None else f"{row['iou']:6.3f}"
        typer.echo(f"{row['class']:<{width}}  {iou}  {row['pixels']:6d}")


# How an evaluation reads on the terminal, by its model's task (core/tasks.py names the tasks).
EVALUATION_PRINTERS = {"classification": _print_classification, "detection": _print_detection,
                       "multilabel": _print_multilabel, "segmentation": _print_segmentation}
