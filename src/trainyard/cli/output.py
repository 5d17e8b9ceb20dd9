"""How commands report: one JSON document on stdout with --json, text for people on stderr,
and a progress bar while a foreground job runs."""

from __future__ import annotations

import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console

from trainyard.core.status import Status
from trainyard.core.tasks import best_of

if TYPE_CHECKING:  # annotations only: --help and refusals never load the job store
    from trainyard.jobs.context import Context
    from trainyard.jobs.store.store import Job

err = Console(stderr=True, highlight=False)


def emit_json(doc: Any) -> None:
    """``doc`` as indented JSON on stdout; a ``Document`` (or one inside it) as the API serves it."""
    sys.stdout.write(json.dumps(doc, indent=2, default=_as_json) + "\n")


def _as_json(value: Any) -> Any:
    from trainyard.core.document import Document  # here: pydantic is loaded already where one is printed

    return value.as_json() if isinstance(value, Document) else str(value)


def fail(message: str, code: int = 1) -> NoReturn:
    """``error: message`` on stderr, on one line however narrow the terminal, then exit ``code``.
    The message is plain text: brackets in it (``pip install 'trainyard[coreml]'``) are not markup."""
    from rich.markup import escape

    err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


class JobProgress:
    """A rich progress bar fed by a job's events (progress, log lines, metrics)."""

    def __init__(self, job: Job):
        # Here, not at the top: only commands that draw a bar pay for it (a few hundredths of a
        # second, which --json and every other command are spared).
        from rich.markup import escape
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"),
                                 TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                 TimeRemainingColumn(), console=err)
        # escaped: a sweep's run names "lenet [lr=0.01]", which Rich would read as markup and drop
        self.task = self.progress.add_task(escape(f"{job.kind} {job.name}"), total=1.0, info="")
        self.kind = job.kind
        self.metrics: dict[str, float] = {}

    def __enter__(self) -> JobProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def on_event(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "progress" and event.get("total"):
            self.progress.update(self.task, completed=event["done"] / event["total"], info=self._info(event))
        elif kind == "metric":
            self.metrics[event["name"]] = event["value"]
            self.metrics["epoch"] = event["epoch"]
        elif kind == "log" and event.get("level") in ("warning", "error"):
            self.progress.console.print(f"[yellow]{event['level']}:[/yellow] {event['message']}")
        elif kind == "waiting":
            self.progress.update(self.task, info="waiting")
            self.progress.console.print(waiting_advice(self.kind, event["message"], event.get("holders") or []),
                                        soft_wrap=True)

    def _info(self, event: dict) -> str:
        parts = [event.get("phase") or ""]
        m = self.metrics
        if "epoch" in m:
            parts.append(f"epoch {m['epoch']:.2f}")
        if "train_loss" in m:
            parts.append(f"loss {m['train_loss']:.4f}")
        found = best_of(m)  # the task's validation score, in its words
        if found:
            parts.append(found[0].score_text.format(found[1]))
        if "images_per_second" in m:
            parts.append(f"{m['images_per_second']:.0f} img/s")
        return "  ".join(p for p in parts if p)


def waiting_advice(kind: str, message: str, holders: list[str]) -> str:
    """What a foreground job waits for (the browser's words) and what the user can do about it."""
    options = ["press Ctrl-C and add --submit to queue it on the server and get your shell back"
               if kind == "model" else "press Ctrl-C to give up"]
    if holders:
        options.append(f"free it with `trainyard jobs abort {holders[0]}`")
    return f"[yellow]{message}[/yellow]: it starts by itself when that ends; or {', or '.join(options)}"


def run_in_foreground(ctx: Context, job: Job, quiet: bool = False) -> Job:
    """Run a job from this process with a progress bar (none if ``quiet``); Ctrl-C, SIGTERM and
    SIGHUP abort it, and the command exits 128 + the signal's number."""
    with contextlib.ExitStack() as stack:
        on_event = None if quiet else stack.enter_context(JobProgress(job)).on_event
        try:
            job = ctx.manager.run_foreground(job.id, on_event=on_event)
        except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM / SIGHUP (jobs/runs/foreground.py)
            err.print("aborted")
            raise typer.Exit(getattr(interrupt, "exit_code", 130)) from None
    if job.status == Status.DONE:
        err.print(f"[green]{job.kind} {job.id} done[/green]")
    else:
        err.print(f"[red]{job.kind} {job.id} {job.status}[/red]{': ' + job.error if job.error else ''}")
    return job
