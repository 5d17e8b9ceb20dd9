"""``trainyard classify MODEL IMAGE...`` and ``trainyard evaluate MODEL``.

MODEL is a model job id (its latest snapshot, or ``--epoch``) or, for classify, a checkpoint
file. Classify runs here, in this process; evaluate runs as a foreground job recorded in the
same store the server reads, so it also shows on the model's classify page.
"""

from __future__ import annotations

from pathlib import Path

import typer

from trainyard.cli.context import cli_context
from trainyard.cli.output import emit_json, err, run_in_foreground
from trainyard.core.errors import NotFound, UserError
from trainyard.core.status import Status


def _load(model: str, epoch: float | None):
    """The loaded model of a job id or a checkpoint file; exits with a message otherwise."""
    from trainyard.inference.loader import InferenceError, load_model, model_checkpoint

    try:
        if Path(model).suffix in (".pt", ".pth") and Path(model).is_file():
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
    epoch: float | None = typer.Option(None, help="snapshot epoch (default: the latest)"),
    top: int = typer.Option(5, min=1, max=100, help="classes to show per image"),
    as_json: bool = typer.Option(False, "--json", help='print {"results": [...]} on stdout'),
) -> None:
    """Classify images: the top classes with their confidences, preprocessed as in training."""
    from trainyard.datasets.images import ImageError, load_image
    from trainyard.inference.responses import classify_named

    loaded = _load(model, epoch)
    named, problems = [], {}
    for i, path in enumerate(images):
        try:
            named.append((str(path), load_image(path, loaded.preprocess["channels"])))
        except ImageError as exc:
            problems[i] = {"image": str(path), "predictions": [], "error": str(exc)}
            err.print(f"[red]error:[/red] {path}: {exc}")
    results = classify_named(loaded, named, top=top) if named else []
    if as_json:
        good = iter(results)
        emit_json({"results": [problems[i] if i in problems else next(good) for i in range(len(images))]})
    else:
        for result in results:
            typer.echo(result["image"])
            for label, confidence in result["predictions"]:
                typer.echo(f"  {100 * confidence:6.2f}%  {label}")
    if problems:
        raise typer.Exit(1)


def evaluate(
    model: str = typer.Argument(..., help="model job id"),
    split: str = typer.Option("val", help="val | test"),
    epoch: float | None = typer.Option(None, help="snapshot epoch (default: the latest)"),
    as_json: bool = typer.Option(False, "--json", help="print the evaluation on stdout"),
) -> None:
    """Evaluate a model on its dataset's validation or test split."""
    from trainyard.inference.results import read_evaluation
    from trainyard.jobs.inference_jobs import create_inference_job

    ctx = cli_context()
    job = create_inference_job(ctx, "evaluate", model, epoch=epoch, split=split, foreground=True)
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
    typer.echo(f"{doc['split']} split, epoch {doc['epoch']:g}: {doc['images']} images")
    typer.echo(f"accuracy {100 * doc['accuracy']:.2f}%   top-5 {100 * doc['top5_accuracy']:.2f}%")
    width = max(len(row["class"]) for row in doc["per_class"])
    typer.echo(f"{'class':<{width}}  precision  recall     f1  images")
    for row in doc["per_class"]:
        typer.echo(f"{row['class']:<{width}}  {row['precision']:9.3f}  {row['recall']:6.3f}  "
                   f"{row['f1']:5.3f}  {row['support']:6d}")
    for pair in doc["most_confused"][:5]:
        typer.echo(f"confused: {pair['count']} x {pair['true']} taken for {pair['predicted']}")


def register(app: typer.Typer) -> None:
    app.command("classify")(classify)
    app.command("evaluate")(evaluate)
