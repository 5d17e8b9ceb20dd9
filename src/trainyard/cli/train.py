"""``trainyard train``: train one network, or a sweep, on one or more datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from trainyard.cli.output import emit_json, err, run_in_foreground
from trainyard.core.errors import InvalidInput
from trainyard.core.formatting import best_score_text
from trainyard.core.vocabulary import MEAN_MODES
from trainyard.networks.table import FAMILIES, STANDARD
from trainyard.training.setting_defaults import AUTO_BATCH, EARLY_STOP_MIN_EPOCHS, default, help_of
from trainyard.training.solvers import solver_names

# The LR policies' names for --help, written out: importing training.lr_policies (pydantic models)
# would double the time `train --help` takes. tests/cli/test_cli_choices.py keeps it equal to
# the registry's lr_policy_names().
LR_POLICIES = ("fixed", "step", "multistep", "exp", "inv", "poly", "sigmoid", "cosine")


def _numbers(text: str | None, kind=float, what: str = "value", words: tuple[str, ...] = ()) -> list:
    """Comma-separated numbers (or one of ``words``, such as a batch size's ``auto``)."""
    if not text:
        return []
    try:
        return [part.strip() if part.strip() in words else kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InvalidInput(f"{what} {text!r} should be comma-separated numbers"
                           f"{''.join(f' or {w}' for w in words)}") from None


def setting_option(name: str, help: str | None = None, flag: str | None = None) -> Any:
    """The option of training setting ``name``: its default (and help, unless ``help`` says it as
    the CLI does) from training/setting_defaults.py, the one place the API's TrainSettings reads too."""
    return typer.Option(default(name), *([flag] if flag else []), help=help or help_of(name))


def recipe_option(name: str, help: str | None = None) -> Any:
    """The option of a setting a network's recipe may set (a YOLO's AdamW, cosine, warm-up): no
    value unless given, so that the recipe holds; the help says the default otherwise."""
    return typer.Option(None, help=f"{help or help_of(name)} (default: the network's recipe, else "
                                   f"{default(name)})")


def _names(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def train(
    dataset: str = typer.Option(..., help="dataset id (comma-separated: one job per dataset)"),
    network: str | None = typer.Option(
        None, help=f"standard network: {' | '.join([*STANDARD.names(), *FAMILIES])} (comma-separated for several)"),
    network_file: Path | None = typer.Option(
        None, help="custom network: a .py defining build(num_classes, in_channels, image_size)"),
    name: str | None = typer.Option(None, help="job name (default: network on dataset)"),
    epochs: float = setting_option("epochs"),
    batch_size: str | None = typer.Option(
        None, help="B or B1,B2 (a sweep) or LOW..HIGH (with --trials), per GPU or process: the global "
                   "batch is B x their number; auto: the largest that fits; default: the network's"),
    accumulation: int = setting_option("accumulation"),
    lr: str | None = typer.Option(
        None, help="base learning rate, LR1,LR2 (a sweep) or LOW..HIGH (with --trials); "
                   f"default {default('lr.base_lr')}"),
    solver: str | None = recipe_option("solver", " | ".join(solver_names())),
    lr_policy: str | None = recipe_option("lr.policy", " | ".join(LR_POLICIES)),
    lr_step: float = setting_option("lr.step_percent"),
    lr_steps: str | None = typer.Option(None, help=help_of("lr.steps_percent")),
    lr_gamma: float | None = typer.Option(None), lr_power: float | None = typer.Option(None),
    warmup: float | None = recipe_option("lr.warmup_percent"),
    momentum: float | None = recipe_option("momentum"),
    weight_decay: float | None = recipe_option("weight_decay"),
    snapshot_interval: float = setting_option("snapshot_interval"),
    val_interval: float = setting_option("val_interval"),
    seed: int | None = setting_option("seed"), crop: int | None = setting_option("crop"),
    mean: str = setting_option("mean", " | ".join(MEAN_MODES)),
    flip: str | None = typer.Option(None, help="augment: none | lr | ud | both (moves a detector's boxes too)"),
    scale_jitter: float | None = typer.Option(None, help=("augment: zoom by 1 +- this (0.1); a detector's "
                                                          "also shifts (a random crop), boxes moved alike")),
    mosaic: float | None = typer.Option(None, help="augment, detectors: the chance an image becomes a 2x2 mosaic "
                                        "of four (0..1), boxes moved alike"),
    mosaic_off: float | None = typer.Option(None, help="augment, detectors: train the last PERCENT without mosaic"),
    ema: float | None = recipe_option("ema"),
    gpus: int | None = typer.Option(None, help="use the next N free GPUs"),
    gpu_ids: str | None = typer.Option(None, help="use exactly these GPUs, e.g. 0,1"),
    processes: int = setting_option("processes"),
    scale_lr: bool = setting_option("scale_lr", flag="--scale-lr"),
    nnodes: int = setting_option("nnodes", "machines taking part in this one job (run this command on each)"),
    node_rank: int = setting_option("node_rank", "this machine's place among --nnodes, 0 to N-1"),
    master: str | None = setting_option("master", "HOST:PORT where node 0 meets the others (with --nnodes)"),
    max_restarts: int = setting_option("max_restarts"),
    elastic: bool = typer.Option(
        False, "--elastic", help="cluster mode: after a lost node, continue from the last checkpoint on the workers "
        "left (the same global batch, by gradient accumulation) and grow back when nodes return"),
    min_workers: int | None = setting_option("min_workers", "--elastic down to K workers at the fewest (default 1)"),
    precision: str = setting_option("precision"),
    pretrained: str | None = typer.Option(
        None, help="imagenet (the network's published weights), a weights store entry, JOB[:EPOCH] or a weights file"),
    freeze_backbone: bool = setting_option("freeze_backbone", "with --pretrained: train only the classifier"),
    backbone_lr_mult: float = setting_option(
        "backbone_lr_mult", "with --pretrained: the backbone's LR as a fraction of the classifier's, e.g. 0.1"),
    trials: int | None = typer.Option(
        None, help="draw N combinations from ranges such as --lr 1e-4..1e-1 (log-uniform) or --batch-size 16..128"),
    early_stop: bool = typer.Option(
        False, "--early-stop", help="stop a sweep's runs that are among the worst at a validation point: from "
        "--early-stop-min-epochs on, at each validation, a run in the worse half of the runs that reached that "
        "point stops (successive halving; the best run always finishes; a stopped run ends done, and "
        "`jobs resume` trains it on)"),
    early_stop_min_epochs: float = typer.Option(EARLY_STOP_MIN_EPOCHS.default, help=EARLY_STOP_MIN_EPOCHS.help),
    submit: bool = typer.Option(False, "--submit", help="queue on the server instead of training here"),
    as_json: bool = typer.Option(False, "--json", help='print {"jobs": [...]} on stdout'),
    visibility: str = typer.Option("private", help="private (you and admins) | team (every user sees it)"),
) -> None:
    """Train a classifier or a detector. Runs here with a progress bar unless --submit."""
    # Over 60 lines only by its parameter list: one typer option per line, each the command's
    # --help (tests/test_function_length.py names it as the one exception).
    from trainyard.networks.table import check_network_name

    for each in _names(network):  # a mistyped name is refused before the job store is opened
        check_network_name(each)
    # Imported here, not at the top: only this command needs them (a lighter start for the rest).
    from trainyard.jobs.kinds.sweeps import parse_range
    from trainyard.jobs.kinds.training import TrainRequest

    source = _read_network_file(network_file) if network_file else None
    lr_given = (("policy", lr_policy), ("step_percent", lr_step), ("warmup_percent", warmup))
    lr_fields: dict[str, Any] = {k: v for k, v in lr_given if v is not None}
    if lr_steps:
        lr_fields["steps_percent"] = _numbers(lr_steps, what="--lr-steps")
    for key, value in (("gamma", lr_gamma), ("power", lr_power)):
        if value is not None:
            lr_fields[key] = value
    settings = dict(epochs=epochs, accumulation=accumulation, solver=solver, lr=lr_fields,
                    momentum=momentum, weight_decay=weight_decay, snapshot_interval=snapshot_interval,
                    val_interval=val_interval, seed=seed, crop=crop, mean=mean, precision=precision,
                    freeze_backbone=freeze_backbone, backbone_lr_mult=backbone_lr_mult, processes=processes,
                    scale_lr=scale_lr, min_workers=min_workers or (1 if elastic else None),
                    nnodes=nnodes, node_rank=node_rank, master=master)
    if ema is not None:
        settings["ema"] = ema
    if augment := {k: v for k, v in (("flip", flip), ("scale_jitter", scale_jitter), ("mosaic", mosaic),
                                     ("mosaic_off_percent", mosaic_off)) if v is not None}:
        settings["augment"] = augment
    networks = _names(network)
    lr_range, batch_range = parse_range(lr or "", float, "--lr"), parse_range(batch_size or "", int, "--batch-size")
    request = TrainRequest(
            name=name or f"{network or (network_file.stem if network_file else 'model')}",
            datasets=_names(dataset), networks=networks, network_source=source,
            base_lrs=[] if lr_range else _numbers(lr, what="--lr"),
            batch_sizes=[] if batch_range else _numbers(batch_size, int, "--batch-size", (AUTO_BATCH,)),
            lr_range=lr_range, batch_size_range=batch_range, trials=trials, early_stop=early_stop,
            early_stop_min_epochs=early_stop_min_epochs,
            gpus=gpus, gpu_ids=_numbers(gpu_ids, int, "--gpu-ids") or None, pretrained=pretrained,
            max_restarts=max_restarts, visibility=visibility,
            settings={k: v for k, v in settings.items() if v is not None})
    _create_and_run(request, submit, as_json)


def _create_and_run(request, submit: bool, as_json: bool) -> None:
    """Make the request's jobs and train them here, or queue them for the server (``submit``)."""
    from trainyard.cli.context import cli_context
    from trainyard.jobs.kinds.training import create_model_jobs
    from trainyard.jobs.scheduling.deployment import follow_deployment

    ctx = cli_context()
    follow_deployment(ctx, foreground=not submit)  # the store's server decides where jobs run
    if submit:  # a queued job's network is checked first: by the server's warm checker if one runs
        from trainyard.cli.remote_check import use_server_checker

        use_server_checker(ctx.settings, lambda line: err.print(line, soft_wrap=True))
    jobs = create_model_jobs(ctx, request, foreground=not submit,
                             say=lambda line: err.print(line, soft_wrap=True, markup=False))
    _run_jobs(ctx, jobs, submit, as_json)


def _read_network_file(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise InvalidInput(f"cannot read the network file {path}: {exc.strerror}") from None


def _run_jobs(ctx, jobs, submit: bool, as_json: bool) -> None:
    from trainyard.jobs.views.documents import job_detail

    if submit:
        named = ", ".join(f"{j.id} ({j.name})" for j in jobs)
        err.print(f"queued {len(jobs)} model job(s) for the server: {named}", soft_wrap=True, markup=False)
    else:
        jobs = [run_in_foreground(ctx, job, quiet=as_json) for job in jobs]
    if as_json:
        emit_json({"jobs": [job_detail(ctx.manager, j) for j in jobs]})
    else:
        for job in jobs:
            best = job_detail(ctx.manager, job).as_json()["best"]
            if best:
                err.print(f"{job.id}: best validation score {best_score_text(best)} at epoch {best['epoch']}")
    if any(j.status.is_unsuccessful for j in jobs):
        raise typer.Exit(1)

