"""``trainyard jobs list | show | abort | delete | resume | compare | tag | note``: any job (dataset,
model, classify-many or evaluate)."""

from __future__ import annotations

import typer

from trainyard.cli.context import cli_context, job_brief, job_detail
from trainyard.cli.known_jobs import refuse_unknown
from trainyard.cli.output import emit_json, err, run_in_foreground
from trainyard.core.errors import InvalidInput
from trainyard.core.formatting import age

app = typer.Typer(help="Look after jobs: list, show, abort, delete, resume, compare, tag, note.",
                  no_args_is_help=True, rich_markup_mode=None)


@app.command("list")
def list_(kind: str | None = typer.Option(None, help="dataset | model"),
          status: str | None = typer.Option(None, help="e.g. running or running,queued"),
          tag: list[str] = typer.Option([], "--tag", help="only jobs with this tag (repeat: jobs with every one)"),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """List jobs, newest first, with their tags."""
    from trainyard.jobs.kinds.documents import TaggedBrief
    from trainyard.jobs.store.labels import labels_of

    ctx = cli_context()
    statuses = status.split(",") if status else None
    listed = ctx.store.list_jobs(kind=kind, statuses=statuses)
    labels = labels_of(ctx.store, [j.id for j in listed])
    wanted = {t.strip().lower() for t in tag if t.strip()}
    jobs = [TaggedBrief(**dict(job_brief(j)), tags=labels[j.id].tags, notes=labels[j.id].notes)
            for j in listed if wanted <= set(labels[j.id].tags)]
    if as_json:
        emit_json({"jobs": jobs})
        return
    for j in jobs:
        line = (f"{j.id}  {j.kind:<13} {j.status:<8} {j.progress * 100:5.1f}%  "
                f"{age(j.created_at):>12}  {j.name}")
        tags = f"  [{', '.join(j.tags)}]" if j.tags else ""
        typer.echo(line + tags + (f"  ({j.error})" if j.error else ""))
    if not jobs and wanted:
        err.print(f"no job is tagged {' and '.join(sorted(wanted))}")


@app.command()
def show(job_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Everything about one job."""
    refuse_unknown(job_id)  # before the store opens: a mistyped id is answered at once
    ctx = cli_context()
    detail = job_detail(ctx.manager, ctx.manager.get(job_id))
    if as_json:
        emit_json(detail)  # as GET /api/jobs/{id} answers
        return
    from trainyard.cli.job_text import job_text
    from trainyard.jobs.kinds.registry import spec_as_written

    text = detail.as_json()
    if "spec" in text:  # a model's settings as written, every one, as its page lists them
        text["spec"] = spec_as_written(ctx.manager.folder(job_id))
    typer.echo(job_text(text))


def _act(action, job_id: str, as_json: bool, verb: str) -> None:
    refuse_unknown(job_id)
    ctx = cli_context()
    result = action(ctx, job_id)
    if as_json:
        emit_json(result)
    else:
        err.print(f"{verb} {job_id}")


@app.command()
def abort(job_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Stop a queued or running job (SIGTERM, then SIGKILL after a grace period)."""
    _act(lambda ctx, i: job_brief(ctx.manager.abort(i)), job_id, as_json, "aborted")


@app.command()
def delete(names: list[str] = typer.Argument(..., metavar="JOB_ID|SWEEP...", help="job ids, or a sweep's name"),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Delete jobs and their folders: each id given, or every run of a sweep (a dataset still used
    by a model cannot be deleted). --json: {"deleted": ID} for one job, {"deleted": [IDS]} for more."""
    ctx = cli_context()
    ids = [job_id for name in names for job_id in _ids_of(ctx, name)]
    for job_id in dict.fromkeys(ids):
        ctx.manager.delete(job_id)
        if not as_json:
            err.print(f"deleted {job_id}", markup=False)
    if as_json:
        emit_json({"deleted": ids[0] if len(ids) == 1 else list(dict.fromkeys(ids))})


def _ids_of(ctx, name: str) -> list[str]:
    """``name`` as job ids: a job's id, else the runs of the sweep called so (newest first)."""
    from trainyard.core.errors import NotFound

    if ctx.store.get_job(name) is not None:
        return [name]
    runs = [job.id for job in ctx.store.list_jobs() if job.group == name]
    if not runs:
        raise NotFound(f"no job with id {name!r} and no sweep called {name!r}")
    return runs


def _resuming(detail: dict, submit: bool) -> str:
    epoch = max(detail.get("snapshots") or [], default=None)
    where = f"from epoch {epoch:g}" if epoch is not None else "from the start (it has no checkpoint)"
    return f"resuming {detail['id']} {where}" + (" on the server" if submit else "")


@app.command()
def resume(job_id: str, submit: bool = typer.Option(False, "--submit", help="let the server run it"),
           gpus: int | None = typer.Option(None, help="continue on the next N free GPUs instead"),
           gpu_ids: str | None = typer.Option(None, help="continue on exactly these GPUs, e.g. 0,1"),
           processes: int | None = typer.Option(None, help="continue as N processes on the CPU"),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Continue an ended model job from its last checkpoint (on other devices if asked)."""
    refuse_unknown(job_id)  # before the store's modules load
    from trainyard.jobs.kinds.resume_model import resume_model_job
    from trainyard.jobs.scheduling.deployment import follow_deployment  # only resume needs these

    ctx = cli_context()
    if ctx.manager.get(job_id).kind == "model":  # the store's server decides where it trains, as for train
        follow_deployment(ctx, foreground=not submit)
    try:
        ids = [int(i) for i in gpu_ids.split(",") if i.strip()] if gpu_ids else None
    except ValueError:
        raise InvalidInput(f"--gpu-ids {gpu_ids!r} should be comma-separated numbers") from None
    job = resume_model_job(ctx, job_id, gpus=gpus, gpu_ids=ids, processes=processes,
                           foreground=not submit)
    resuming = _resuming(job_detail(ctx.manager, job).as_json(), submit)
    err.print(resuming, soft_wrap=True)  # first, before the run's lines
    if not submit:
        job = run_in_foreground(ctx, job, quiet=as_json)
    if as_json:
        emit_json(job_detail(ctx.manager, job))
    if job.status.is_unsuccessful:
        raise typer.Exit(1)


@app.command("compare")
def compare_(job_ids: list[str] = typer.Argument(..., help="model job ids (two or more), or a sweep's name"),
             as_json: bool = typer.Option(False, "--json")) -> None:
    """Runs side by side: the settings that differ and their metrics (--json: curves too).
    A sweep's name stands for its runs (the best 20)."""
    from trainyard.jobs.views.compare import compare, parse_ids, text_table
    from trainyard.jobs.views.sweep import runs_named

    ctx = cli_context()
    doc = compare(ctx.manager, parse_ids(runs_named(ctx.manager, parse_ids(job_ids))))
    if as_json:
        emit_json(doc)
        return
    for line in text_table(doc):
        typer.echo(line)
    if not doc.differs:
        err.print("no setting differs between these runs")


@app.command()
def tag(job_id: str, tags: list[str] = typer.Argument(..., help="words such as baseline or lr-search"),
        remove: bool = typer.Option(False, "--remove", help="take these tags off instead"),
        as_json: bool = typer.Option(False, "--json")) -> None:
    """Add tags to a job (or take them off with --remove); the home list filters by tag."""
    refuse_unknown(job_id)  # before the store's modules load
    from trainyard.jobs.store.labels import labels_of, set_labels

    ctx = cli_context()
    job = ctx.manager.get(job_id)
    have = labels_of(ctx.store, [job.id])[job.id].tags
    wanted = [t.lower() for t in tags]
    new = [t for t in have if t not in wanted] if remove else [*have, *tags]
    labels = set_labels(ctx.store, job.id, tags=new)
    if as_json:
        emit_json({"id": job.id, **labels.as_json()})
    else:
        err.print(f"{job.id}: tags {', '.join(labels.tags) or '(none)'}")


@app.command()
def note(job_id: str, text: str = typer.Argument(..., help="the job's notes (replaces them; \"\" clears)"),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Write a job's notes: what it tried, what came of it."""
    refuse_unknown(job_id)  # before the store's modules load
    from trainyard.jobs.store.labels import set_labels

    ctx = cli_context()
    job = ctx.manager.get(job_id)
    labels = set_labels(ctx.store, job.id, notes=text)
    if as_json:
        emit_json({"id": job.id, **labels.as_json()})
    else:
        err.print(f"{job.id}: notes saved ({len(labels.notes)} characters)")
