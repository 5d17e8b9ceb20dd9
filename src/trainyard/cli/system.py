"""``trainyard system``: the backend, this machine's GPUs, CPU and memory, and the cluster's nodes."""

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

    try:
        report = system_report(cli_context(), Hardware())
    except ClusterUnavailable as exc:
        fail(str(exc), code=1)
    if as_json:
        emit_json(report)
        return
    typer.echo(f"backend: {report['backend']}")
    for gpu in report["gpus"]:
        typer.echo(f"{gpu['label']}" + (f"  (job {gpu['job']})" if gpu.get("job") else ""))
    typer.echo(f"CPU: {report['cpu']['count']} cores, {report['cpu']['percent']}% busy; "
               f"memory {report['memory']['used'] / 2**30:.1f} of {report['memory']['total'] / 2**30:.1f} GiB")
    box = report["sandbox"]
    typer.echo(f"user code: confined by {box['mechanism']}" if box["available"] else f"user code: {box['reason']}")
    for node in report.get("nodes", []):
        gpus = ", ".join(g["name"] or f"GPU {g['index']}" for g in node["gpus"]) or "no GPU"
        state = "alive" if node["alive"] else _dead(node.get("died_at"))
        typer.echo(f"node {node['host']} ({node['id'][:8]}) {state}: {node['cpus_in_use']}/{node['cpus']} CPUs, "
                   f"{node['gpus_in_use']}/{len(node['gpus'])} GPUs in use ({gpus})"
                   + (f"; jobs {', '.join(node['jobs'])}" if node["jobs"] else ""))



def _dead(died_at: str | None) -> str:
    """``DEAD since 2026-05-04 12:00:01 (3m 20s ago)``: /api/system's ``died_at`` (ISO, UTC) in the
    CLI's clock and age words (as ``jobs list`` shows ages)."""
    from trainyard.core.formatting import age, clock

    try:
        when = datetime.fromisoformat(died_at).timestamp() if died_at else None
    except ValueError:  # a server of another version: say what it said
        return f"DEAD since {died_at}"
    return f"DEAD since {clock(when)} ({age(when)})" if when else "DEAD"
