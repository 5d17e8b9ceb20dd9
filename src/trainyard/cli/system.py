"""``trainyard system``: the backend, versions, this machine's GPUs and job slots with the job holding each,
CPU, memory and free disk, and the cluster's nodes: /api/system's report (jobs/views/system.py) in words."""

from __future__ import annotations

from datetime import datetime

import typer

from trainyard.cli.output import emit_json, fail


def system(as_json: bool = typer.Option(False, "--json", help="print the report as JSON on stdout")) -> None:
    """What trainyard can run on: local devices, and in cluster mode every node of the cluster."""
    from trainyard.cli.context import cli_context
    from trainyard.cluster.connect import ClusterUnavailable
    from trainyard.jobs.views.hardware import Hardware
    from trainyard.jobs.views.system import system_report

    ctx = cli_context()
    try:
        found = system_report(ctx, Hardware())
    except ClusterUnavailable as exc:
        fail(str(exc), code=1)
    if as_json:
        emit_json(found)  # as GET /api/system answers
        return
    report = found.as_json()
    typer.echo(f"backend: {report['backend']}")
    typer.echo("versions: " + ", ".join(f"{name} {version or 'not installed'}"
                                        for name, version in report["versions"].items()))
    for gpu in report["gpus"]:
        typer.echo(f"{gpu['label']}: {_holder(gpu)}")
    for slot in report["slots"]:
        typer.echo(f"{slot['label']}: {_holder(slot)}")
    typer.echo(f"CPU: {report['cpu']['count']} cores, {report['cpu']['percent']}% busy; "
               f"memory {report['memory']['used'] / 2**30:.1f} of {report['memory']['total'] / 2**30:.1f} GiB")
    disk = report["disk"]
    typer.echo(f"disk: {disk['free'] / 2**30:.1f} GiB free of {disk['total'] / 2**30:.1f} GiB under {disk['path']}")
    box = report["sandbox"]
    typer.echo(f"user code: confined by {box['mechanism']}" if box["available"] else f"user code: {box['reason']}")
    for node in report.get("nodes", []):
        gpus = ", ".join(g["name"] or f"GPU {g['index']}" for g in node["gpus"]) or "no GPU"
        state = "alive" if node["alive"] else _dead(node.get("died_at"))
        typer.echo(f"node {node['host']} ({node['id'][:8]}) {state}: {node['cpus_in_use']}/{node['cpus']} CPUs, "
                   f"{node['gpus_in_use']}/{len(node['gpus'])} GPUs in use ({gpus})"
                   + (f"; jobs {', '.join(node['jobs'])}" if node["jobs"] else ""))
    _print_settings(ctx.settings)


def _print_settings(settings) -> None:
    """Every TRAINYARD_* setting with its value here (secrets only as set or not), for a person
    checking what this server or CLI runs with (settings.py documents each)."""
    from trainyard.settings import listing

    typer.echo("settings:")
    for variable, value, what in listing(settings):
        typer.echo(f"  {variable}={value}" + (f"  ({what})" if what else ""))


def _holder(device: dict) -> str:
    """``free``, or the job holding a GPU or slot: ``flowers lenet (job 3f2a...)``, as the System page."""
    if not device.get("job"):
        return "free"
    holder = device.get("holder")
    return f"{holder['name']} (job {device['job']})" if holder else f"job {device['job']}"


def _dead(died_at: str | None) -> str:
    """``DEAD since 2026-05-04 12:00:01 (3m 20s ago)``: /api/system's ``died_at`` (ISO, UTC) in the
    CLI's clock and age words (as ``jobs list`` shows ages)."""
    from trainyard.core.formatting import age, clock

    try:
        when = datetime.fromisoformat(died_at).timestamp() if died_at else None
    except ValueError:  # a server of another version: say what it said
        return f"DEAD since {died_at}"
    return f"DEAD since {clock(when)} ({age(when)})" if when else "DEAD"
