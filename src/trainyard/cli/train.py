"""``trainyard train``: train one network, or a sweep, on one or more datasets."""

from __future__ import annotations

from pathlib import Path

import typer

from trainyard.cli.output import emit_json, err, run_in_foreground
from trainyard.core.errors import InvalidInput
from trainyard.core.vocabulary import MEAN_MODES
from trainyard.networks.table import FAMILIES, STANDARD
from trainyard.training.solvers import solver_names

# The LR policies' names for --help, written out: importing training.lr_policies (pydantic models)
# would double the time `train --help` takes. tests/cli/test_cli_choices.py keeps it equal to
# the registry's lr_policy_names().
LR_POLICIES = ("fixed", "step", "multistep", "exp", "inv", "poly", "sigmoid", "cosine")


def _numbers(text: str | None, kind=float, what: str = "value") -> list:
    if not text:
        return []
    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InvalidInput(f"{what} {text!r} should be comma-separated numbers") from None


def _names(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def train(
    dataset: str = typer.Option(..., help="dataset id (comma-separated: one job per dataset)"),
    network: str | None = typer.Option(
        None, help=f"standard network: {' | '.join([*STANDARD.names(), *FAMILIES])} (comma-separated for several)"),
    network_file: Path | None = typer.Option(
        None, help="custom network: a .py defining build(num_classes, in_channels, image_size)"),
    name: str | None = typer.Option(None, help="job name (default: network on dataset)"),
    epochs: float = typer.Option(30.0),
    batch_size: str | None = typer.Option(
        None, help="B or B1,B2 (a sweep) or LOW..HIGH (with --trials), per GPU or process: the global "
                   "batch is B x their number; default: the network's"),
    accumulation: int = typer.Option(1, help="batches per optimizer step"),
    lr: str | None = typer.Option(
        None, help="base learning rate, LR1,LR2 (a sweep) or LOW..HIGH (with --trials); default 0.01"),
    solver: str = typer.Option("sgd", help=" | ".join(solver_names())),
    lr_policy: str = typer.Option("step", help=" | ".join(LR_POLICIES)),
    lr_step: float = typer.Option(33.0, help="step size, in percent of training"),
    lr_steps: str | None = typer.Option(None, help="multistep points in percent, e.g. 50,85"),
    lr_gamma: float | None = typer.Option(None), lr_power: float | None = typer.Option(None),
    warmup: float = typer.Option(0.0, help="linear warm-up, in percent of training"),
    momentum: float = typer.Option(0.9), weight_decay: float = typer.Option(1e-4),
    snapshot_interval: float = typer.Option(1.0, help="epochs between checkpoints"),
    val_interval: float = typer.Option(1.0, help="epochs between validations"),
    seed: int | None = typer.Option(None), crop: int | None = typer.Option(None),
    mean: str = typer.Option("image", help=" | ".join(MEAN_MODES)),
    flip: str | None = typer.Option(None, help="augment: none | lr | ud | both (moves a detector's boxes too)"),
    scale_jitter: float | None = typer.Option(None, help="augment: zoom by 1 +- this (0.1), boxes moved alike"),
    gpus: int | None = typer.Option(None, help="use the next N free GPUs"),
    gpu_ids: str | None = typer.Option(None, help="use exactly these GPUs, e.g. 0,1"),
    processes: int = typer.Option(1, help="data-parallel processes on the CPU (gloo), e.g. to test multi-GPU runs"),
    scale_lr: bool = typer.Option(
        False, "--scale-lr", help="multiply the LR by the number of GPUs/processes (linear scaling)"),
    nnodes: int = typer.Option(1, help="machines taking part in this one job (run this command on each)"),
    node_rank: int = typer.Option(0, help="this machine's place among --nnodes, 0 to N-1"),
    master: str | None = typer.Option(None, help="HOST:PORT where node 0 meets the others (with --nnodes)"),
    max_restarts: int = typer.Option(
        0, help="cluster mode: resume from the last checkpoint up to K times after a lost worker or node"),
    precision: str = typer.Option("auto", help="auto | fp32 | bf16 | fp16"),
    pretrained: str | None = typer.Option(
        None, help="imagenet (the network's published weights), a weights store entry, JOB[:EPOCH] or a weights file"),
    freeze_backbone: bool = typer.Option(False, help="with --pretrained: train only the classifier"),
    backbone_lr_mult: float = typer.Option(
        1.0, help="with --pretrained: the backbone's LR as a fraction of the classifier's, e.g. 0.1"),
    trials: int | None = typer.Option(
        None, help="draw N combinations from ranges such as --lr 1e-4..1e-1 (log-uniform) or --batch-size 16..128"),
    early_stop: bool = typer.Option(
        False, "--early-stop", help="stop a sweep's runs that are among the worst at a validation point: from "
        "--early-stop-min-epochs on, at each validation, a run in the worse half of the runs that reached that "
        "point stops (successive halving; the best run always finishes; a stopped run ends done, and "
        "`jobs resume` trains it on)"),
    early_stop_min_epochs: float = typer.Option(
        3.0, help="with --early-stop: epochs every run trains before it is judged"),
    submit: bool = typer.Option(False, "--submit", help="queue on the server instead of training here"),
    as_json: bool = typer.Option(False, "--json", help='print {"jobs": [...]} on stdout'),
) -> None:
    """Train a classifier or a detector. Runs here with a progress bar unless --submit."""
    from trainyard.networks.table import check_network_name

    for each in _names(network):  # a mistyped name is refused before the job store is opened
        check_network_name(each)
    # Imported here, not at the top: only this command needs them (a lighter start for the rest).
    from trainyard.cli.context import cli_context
    from trainyard.jobs.kinds.sweeps import parse_range
    from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
    from trainyard.jobs.scheduling.deployment import follow_deployment

    source = _read_network_file(network_file) if network_file else None
    lr_fields = {"policy": lr_policy, "step_percent": lr_step, "warmup_percent": warmup}
    if lr_steps:
        lr_fields["steps_percent"] = _numbers(lr_steps, what="--lr-steps")
    for key, value in (("gamma", lr_gamma), ("power", lr_power)):
        if value is not None:
            lr_fields[key] = value
    settings = dict(epochs=epochs, accumulation=accumulation, solver=solver, lr=lr_fields,
                    momentum=momentum, weight_decay=weight_decay, snapshot_interval=snapshot_interval,
                    val_interval=val_interval, seed=seed, crop=crop, mean=mean, precision=precision,
                    freeze_backbone=freeze_backbone, backbone_lr_mult=backbone_lr_mult, processes=processes,
                    scale_lr=scale_lr,
                    nnodes=nnodes, node_rank=node_rank, master=master)
    augment = {k: v for k, v in (("flip", flip), ("scale_jitter", scale_jitter)) if v is not None}
    if augment:
        settings["augment"] = augment
    networks = _names(network)
    lr_range, batch_range = parse_range(lr or "", float, "--lr"), parse_range(batch_size or "", int, "--batch-size")
    request = TrainRequest(
            name=name or f"{network or (network_file.stem if network_file else 'model')}",
            datasets=_names(dataset), networks=networks, network_source=source,
            base_lrs=[] if lr_range else _numbers(lr, what="--lr"),
            batch_sizes=[] if batch_range else _numbers(batch_size, int, "--batch-size"),
            lr_range=lr_range, batch_size_range=batch_range, trials=trials, early_stop=early_stop,
            early_stop_min_epochs=early_stop_min_epochs,
            gpus=gpus, gpu_ids=_numbers(gpu_ids, int, "--gpu-ids") or None, pretrained=pretrained,
            max_restarts=max_restarts,
            settings={k: v for k, v in settings.items() if v is not None})
    ctx = cli_context()
    follow_deployment(ctx, foreground=not submit)  # the store's server decides where jobs run
    if submit:  # a queued job's network is checked first: by the server's warm checker if one runs
        from trainyard.cli.remote_check import use_server_checker

        use_server_checker(ctx.settings, lambda line: err.print(line, soft_wrap=True))
    jobs = create_model_jobs(ctx, request, foreground=not submit)
    _run_jobs(ctx, jobs, submit, as_json)


def _read_network_file(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise InvalidInput(f"cannot read the network file {path}: {exc.strerror}") from None


def _run_jobs(ctx, jobs, submit: bool, as_json: bool) -> None:
    from trainyard.jobs.views.documents import job_detail

    if submit:
        err.print(f"queued {len(jobs)} model job(s) for the server: {', '.join(j.id for j in jobs)}")
    else:
        jobs = [run_in_foreground(ctx, job, quiet=as_json) for job in jobs]
    if as_json:
        emit_json({"jobs": [job_detail(ctx.manager, j) for j in jobs]})
    else:
        for job in jobs:
            best = job_detail(ctx.manager, job)["best"]
            if best:
                err.print(f"{job.id}: best validation accuracy {best['val_accuracy']:.2f}% at epoch {best['epoch']}")
    if any(j.status.is_unsuccessful for j in jobs):
        raise typer.Exit(1)

