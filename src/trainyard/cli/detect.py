"""``trainyard detect MODEL IMAGE... [--epoch N] [--threshold 0.5] [--json]``.

MODEL is a detection model job's id (its latest snapshot, or ``--epoch``) or a checkpoint file.
The detector runs in this process (torch), on each image fitted as its dataset was built;
boxes are printed in the image's own pixels, best first. ``--json`` prints
``{"results": [{"image", "boxes": [{"label", "score", "box": [x1, y1, x2, y2]}]}]}``, the shape
of ``POST /api/models/{id}/detect`` and of the archive's scripts.
"""

from __future__ import annotations

from pathlib import Path

import typer

from trainyard.cli.context import cli_context
from trainyard.cli.known_jobs import refuse_unknown
from trainyard.cli.output import emit_json, err
from trainyard.core.errors import NotFound


def _checkpoint(model: str, epoch: float | None) -> Path:
    from trainyard.inference.snapshots import model_checkpoint

    if Path(model).suffix in (".pt", ".pth") and Path(model).is_file():
        return Path(model)
    refuse_unknown(model, f"no model with id {model!r} (give a model job id, or a checkpoint .pt file)")
    ctx = cli_context()
    job = ctx.store.get_job(model)
    if job is None or job.kind != "model":
        raise NotFound(f"no model with id {model!r} (give a model job id, or a checkpoint .pt file)")
    return model_checkpoint(ctx.manager.folder(job.id).path, epoch)[1]


def detect(
    model: str = typer.Argument(..., help="detection model job id, or a checkpoint file"),
    images: list[Path] = typer.Argument(..., help="image files"),
    epoch: float | None = typer.Option(None, help="snapshot epoch (default: the latest)"),
    threshold: float = typer.Option(0.5, min=0.0, max=1.0, help="smallest score of a box shown (0..1)"),
    as_json: bool = typer.Option(False, "--json", help='print {"results": [...]} on stdout'),
) -> None:
    """Detect objects in images: boxes with labels and scores, in each image's own pixels."""
    from trainyard.datasets.images import ImageError, load_image
    from trainyard.inference.detection.detect import detect as run_detect
    from trainyard.inference.detection.detector import load_detector

    loaded = load_detector(_checkpoint(model, epoch))
    named, problems = [], {}
    for i, path in enumerate(images):
        try:
            named.append((str(path), load_image(path, loaded.preprocess.channels)))
        except ImageError as exc:
            problems[i] = {"image": str(path), "boxes": [], "error": str(exc)}
            err.print(f"[red]error:[/red] {path}: {exc}")
    good = iter(run_detect(loaded, named, threshold) if named else [])
    results: list[dict] = [problems[i] if i in problems else next(good) for i in range(len(images))]
    if as_json:
        emit_json({"results": results})
    else:
        for result in results:
            typer.echo(f"{result['image']}: {len(result['boxes'])} boxes")
            for box in result["boxes"]:
                x1, y1, x2, y2 = box["box"]
                typer.echo(f"  {100 * box['score']:6.2f}%  {box['label']}  [{x1:.1f}, {y1:.1f}, {x2:.1f}, {y2:.1f}]")
    if problems:
        raise typer.Exit(1)
