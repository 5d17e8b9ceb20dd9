"""``trainyard detect MODEL IMAGE|FOLDER|LIST... [--epoch N] [--threshold 0.5] [--json]``.

MODEL is a detection model job's id (its best snapshot, or ``--epoch``: a number or last) or a checkpoint file.
Folders (their images, below them) and ``.txt`` list files are read a batch at a time, as
``trainyard classify`` streams: memory stays flat in the number of images. A standard detector
runs in this process (torch), a custom one in its sandboxed worker (inference/detection/confined.py),
on each image fitted as its dataset was built; boxes are printed in the image's own pixels, best
first. ``--json`` prints
``{"results": [{"image", "boxes": [{"label", "score", "box": [x1, y1, x2, y2]}]}]}``, the shape
of ``POST /api/models/{id}/detect`` and of the archive's scripts.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import typer

from trainyard.cli.context import cli_context
from trainyard.cli.epochs import chosen_epoch, epoch_option
from trainyard.cli.known_jobs import refuse_unknown
from trainyard.cli.output import emit_json, err
from trainyard.core.errors import NotFound


def _checkpoint(model: str, epoch: str | None) -> tuple[Path, bool | None]:
    """(the checkpoint, whether the store recorded its network as user code; None for a file)."""
    from trainyard.inference.snapshots import model_checkpoint
    from trainyard.jobs.store.confinement import recorded_user_code

    if Path(model).suffix in (".pt", ".pth") and Path(model).is_file():
        return Path(model), None
    refuse_unknown(model, f"no model with id {model!r} (give a model job id, or a checkpoint .pt file)")
    ctx = cli_context()
    job = ctx.store.get_job(model)
    if job is None or job.kind != "model":
        raise NotFound(f"no model with id {model!r} (give a model job id, or a checkpoint .pt file)")
    job_dir = ctx.manager.folder(job.id).path
    return model_checkpoint(job_dir, chosen_epoch(model, job_dir, epoch))[1], recorded_user_code(ctx, job.id)


def image_paths(given: list[Path]) -> Iterator[Path]:
    """The image files ``given`` names, lazily: a folder's images (sorted, below it), a list file's
    (``.txt``: a path a line, relative to the list's folder), or the image itself."""
    from trainyard.inference.sources import folder_items, list_items

    for path in given:
        if path.is_dir():
            items = folder_items(path, [])
        elif path.suffix.lower() == ".txt":
            items = list_items(path, [])
        else:
            yield path
            continue
        yield from (item.path for item in items if item.path is not None)


def detect(
    model: str = typer.Argument(..., help="detection model job id, or a checkpoint file"),
    images: list[Path] = typer.Argument(..., help="image files, folders of images, or .txt lists of image paths"),
    epoch: str | None = epoch_option(),
    threshold: float = typer.Option(0.5, min=0.0, max=1.0, help="smallest score of a box shown (0..1)"),
    as_json: bool = typer.Option(False, "--json", help='print {"results": [...]} on stdout'),
) -> None:
    """Detect objects in images: boxes with labels and scores, in each image's own pixels.

    Folders and lists are read a batch at a time, so memory stays flat however many images."""
    from trainyard.cli.inference import BATCH

    path, custom = _checkpoint(model, epoch)
    results: list[dict] = []
    failed = False
    paths = image_paths(images)
    while chunk := list(itertools.islice(paths, BATCH)):
        found = _detect_chunk(path, custom, chunk, threshold)
        failed |= any("error" in result for result in found)
        if as_json:
            results += found  # a few bytes an image; the pixels are gone
        else:
            _print(found)
    if as_json:
        emit_json({"results": results})
    if failed:
        raise typer.Exit(1)


def _detect_chunk(path: Path, custom: bool | None, paths: list[Path], threshold: float) -> list[dict]:
    """One result per path, in order: its boxes, or ``{"boxes": [], "error"}`` (also on stderr)."""
    from trainyard.datasets.images import ImageError, load_image
    from trainyard.inference.detection.confined import detect_checkpoint

    named: list[tuple[str, Path | bytes]] = []
    problems = {}
    for i, image in enumerate(paths):
        try:
            load_image(image, 3).close()  # readable: the rest get their boxes, this one its error
            named.append((str(image), image))
        except ImageError as exc:
            problems[i] = {"image": str(image), "boxes": [], "error": str(exc)}
            err.print(f"[red]error:[/red] {image}: {exc}")
    found = detect_checkpoint(path, named, threshold=threshold, custom=custom)["results"] if named else []
    good = iter(found)
    return [problems[i] if i in problems else next(good) for i in range(len(paths))]


def _print(results: list[dict]) -> None:
    for result in results:
        if "error" in result:
            continue  # said on stderr
        typer.echo(f"{result['image']}: {len(result['boxes'])} boxes")
        for box in result["boxes"]:
            x1, y1, x2, y2 = box["box"]
            typer.echo(f"  {100 * box['score']:6.2f}%  {box['label']}  [{x1:.1f}, {y1:.1f}, {x2:.1f}, {y2:.1f}]")
