"""``trainyard weights list | pull | import | remove | visibility``: the pretrained weights store.

Each entry is its importer's or puller's (the logged-in user, else the home's first admin),
private unless ``--visibility team``; another user's private entry reads as absent.

A UserError from the store (a hash mismatch, weights for another network, ...) ends the command
with exit code 2 and its one line, in cli/errors.py like every command's."""

from __future__ import annotations

from pathlib import Path

import typer

from trainyard.cli.output import emit_json, err, fail

app = typer.Typer(help="Pretrained weights: list, pull (download), import, remove.", no_args_is_help=True,
                  rich_markup_mode=None)


def get_settings():
    """The settings (imported here: `weights --help` never loads pydantic-settings)."""
    from trainyard.settings import get_settings

    return get_settings()


def _store():
    return _stores()[0]


def _stores():
    """The weights store, acting as the logged-in user (else the home's first admin), and the
    job store (its audit log)."""
    from trainyard.cli.context import cli_context
    from trainyard.jobs.accounts.weights_access import ActorAccess
    from trainyard.weights.store import (
        WeightsStore,  # only these commands need it
    )

    ctx = cli_context()
    return WeightsStore.from_settings(ctx.settings, ActorAccess(ctx.store)), ctx.store


def _audit(stores, action: str, target: str) -> None:
    """The audit log's line of a change made here, as the acting user."""
    from trainyard.jobs.accounts import audit

    audit.record(stores[1], stores[0].access.who(), action, target)


VISIBILITY_HELP = "private (yours alone; the default) or team (every user sees it)"


@app.command("list")
def list_(words: str = typer.Argument("", metavar="[SEARCH]", help="the same as --search"),
          search: str = typer.Option("", help="only entries whose name or network has every word of TEXT"),
          mine: bool = typer.Option(False, "--mine", help="only your own weights (--source mine)"),
          source: str | None = typer.Option(None, help="torchvision | timm | mine"),
          present: bool = typer.Option(False, "--present", help="only weights in the store"),
          show_all: bool = typer.Option(False, "--all", help="every published entry too (about 1,800)"),
          as_json: bool = typer.Option(False, "--json", help="every entry that matches, as JSON")) -> None:
    """Your own and pulled weights, and how to find the ones torchvision and timm publish.

    A search, --source or --all lists published entries too; --json lists every match."""
    if source not in (None, "torchvision", "timm", "mine", "user"):  # "user": the first name of "mine"
        fail(f"--source {source!r} should be torchvision, timm or mine", code=2)
    if mine and source not in (None, "mine", "user"):
        fail(f"--mine lists only your own weights, --source {source} only {source}'s: give one of them", code=2)
    source = "mine" if mine else source
    rows = _store().list(search or words, source, present)
    if as_json:
        from trainyard.weights.documents import WeightsRow

        emit_json({"weights": [WeightsRow(**row) for row in rows]})  # each row as the API answers it
        return
    # Without a question, the 1,800 published entries would bury the few the user has.
    shown = rows if (show_all or search or words or source) else [r for r in rows if r["present"]]
    for row in shown:
        typer.echo(_line(row))
    err.print(_summary(len(shown), len(rows), get_settings().weights_dir))


def _summary(shown: int, matched: int, folder: Path) -> str:
    """The count shown, and how to see the rest when some were left out."""
    if shown == matched:
        return f"{shown} entries; * = in the store ({folder})"
    return (f"{shown} entries in the store ({folder}), yours and pulled; {matched - shown} more published by "
            "torchvision and timm: search them with `trainyard weights list resnet` (words of a name or "
            "network), `--source timm`, or `--all` for every one")


def _line(row: dict) -> str:
    """One entry: in the store, name, network, input size, file size, published top-1."""
    top1 = next((v for k, v in row["accuracy"].items() if k.endswith("acc@1")), None)  # finite: store.describe
    size = f"{row['size_mb']:.0f} MB" if row["size_mb"] else ""
    side = "x".join(str(v) for v in row["input_size"][1:]) if row.get("input_size") else ""
    mark = "*" if row["present"] else " "
    unverified = " unverified" if row["present"] and row.get("verified") is False else ""  # no hash to check
    return (f"{mark} {row['name']:<48} {row['network']:<28} {side:>7} {size:>8} "
            f"{f'top-1 {top1:.1f}%' if top1 is not None else ''}{unverified}").rstrip()


@app.command()
def pull(name: str = typer.Argument(..., help="e.g. resnet18.imagenet or timm:resnet10t.c3_in1k"),
         visibility: str | None = typer.Option(None, help=VISIBILITY_HELP),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Download published weights (resumes a partial download, checks the published hash)."""
    # Here, not at the top: every other command would pay for importing rich.progress.
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    from trainyard.core.ownership import checked_visibility

    if visibility is not None:  # refused before the download starts
        checked_visibility(visibility)
    stores = _stores()
    store = stores[0]
    columns = (TextColumn(name), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=err, disable=as_json) as bar:
        task = bar.add_task(name, total=None)
        row = store.pull(name, lambda done, total: bar.update(task, completed=done, total=total),
                         visibility=visibility)
    _audit(stores, "pull weights", row["name"])
    _report(row, as_json, "pulled")


@app.command("import")
def import_(name: str = typer.Argument(..., help="a published entry, or a new name for your own weights"),
            file: Path = typer.Argument(..., help="the weights file (.pth, .pt, .safetensors, a checkpoint)"),
            network: str | None = typer.Option(None, help="the network your own weights are for"),
            mean: str | None = typer.Option(None, help="your weights' input mean per channel, 0..1 "
                                            "scale, e.g. 0.485,0.456,0.406 (one value: all channels)"),
            std: str | None = typer.Option(None, help="their input std per channel, 0..1 scale"),
            visibility: str | None = typer.Option(None, help=VISIBILITY_HELP),
            as_json: bool = typer.Option(False, "--json")) -> None:
    """Add a file copied by hand: a published entry's (hash-checked), or your own weights.

    Fine-tuning feeds the weights ``(x - mean) / std`` (x in 0..1) as they were trained on; a
    trainyard checkpoint brings its own. Without either, the fine-tune recomputes the
    network's BatchNorm statistics on its data before the first epoch."""
    stores = _stores()
    row = stores[0].import_file(name, file, network, mean, std, visibility)
    _audit(stores, "import weights", row["name"])
    _report(row, as_json, "imported")


@app.command()
def remove(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Delete weights from the store (yours, or any as an admin)."""
    stores = _stores()
    row = stores[0].remove(name)
    _audit(stores, "remove weights", row["name"])
    _report(row, as_json, "removed")


@app.command()
def visibility(name: str, value: str = typer.Argument(..., metavar="private|team", help=VISIBILITY_HELP),
               as_json: bool = typer.Option(False, "--json")) -> None:
    """Make your stored weights private or the team's."""
    stores = _stores()
    row = stores[0].set_visibility(name, value)
    _audit(stores, "weights visibility", f"{row['name']}:{value}")
    _report(row, as_json, f"made {value}:")


def _report(row: dict, as_json: bool, verb: str) -> None:
    if as_json:
        from trainyard.weights.documents import WeightsRow

        emit_json(WeightsRow(**row))  # as POST and DELETE /api/weights answer
    else:
        err.print(f"{verb} {row['name']} ({row['network']})" + (f": {row['path']}" if row["path"] else ""))
        if row.get("verified") is False:
            err.print("unverified: its source published no hash to check the file against")
        if verb == "imported" and row.get("source") == "user":
            norm = (f"mean {row['mean']}, std {row['std']}" if row.get("mean") else
                    "unknown (a fine-tune recomputes BatchNorm statistics on its data)")
            err.print(f"input normalisation: {norm}")
        if row.get("dropped"):
            shown = ", ".join(row["dropped"]["names"])
            err.print(f"dropped {row['dropped']['count']} tensors that are not {row['network']}'s: {shown}"
                      + (", ..." if row["dropped"]["count"] > len(row["dropped"]["names"]) else ""))
