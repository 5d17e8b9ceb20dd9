"""``trainyard segment MODEL IMAGE|FOLDER|LIST... --output DIR [--epoch N] [--json]``.

MODEL is a segmentation model job's id (its best snapshot, or ``--epoch``) or a checkpoint file.
Each image's mask is written to DIR as an 8-bit index PNG at the image's own size, named by the
image's stem (``a/b.jpg`` -> ``DIR/b.png``), each pixel its class's index. ``--json`` prints
``{"classes": [...], "results": [{"image", "mask", "areas": {class: share}}]}``; an image that
cannot be read gets ``"error"`` (and the line on stderr), and the exit status is 1.
"""

from __future__ import annotations

from pathlib import Path

import typer

from trainyard.cli.detect import _checkpoint, image_paths
from trainyard.cli.epochs import epoch_option
from trainyard.cli.output import emit_json, err
from trainyard.core.errors import InvalidInput


def segment(
    model: str = typer.Argument(..., help="segmentation model job id, or a checkpoint file"),
    images: list[Path] = typer.Argument(..., help="image files, folders of images, or .txt lists of image paths"),
    output: Path = typer.Option(..., "--output", help="folder the index-PNG masks are written to"),
    epoch: str | None = epoch_option(),
    as_json: bool = typer.Option(False, "--json", help='print {"classes", "results": [...]} on stdout'),
) -> None:
    """Segment images: one index PNG per image in --output, at the image's size, named by its stem."""
    from trainyard.datasets.images import ImageError
    from trainyard.inference.segmentation.segmenter import areas, load_segmenter, save_mask

    path, _ = _checkpoint(model, epoch)
    loaded = load_segmenter(path)
    if output.exists() and not output.is_dir():
        raise InvalidInput(f"--output {output} is a file, not a folder")
    output.mkdir(parents=True, exist_ok=True)
    results: list[dict] = []
    failed = False
    for image in image_paths(images):
        try:
            mask = loaded.mask(image)
        except ImageError as exc:
            err.print(f"[red]error:[/red] {image}: {exc}")
            results.append({"image": str(image), "error": str(exc)})
            failed = True
            continue
        target = output / f"{image.stem}.png"
        save_mask(mask, target)
        shares = areas(mask, loaded.classes)
        results.append({"image": str(image), "mask": str(target), "areas": shares})
        if not as_json:
            text = ", ".join(f"{k} {100 * v:.1f}%" for k, v in shares.items() if v)
            typer.echo(f"{image} -> {target}: {text}")
    if as_json:
        emit_json({"classes": loaded.classes, "results": results})
    if failed:
        raise typer.Exit(1)
