"""``trainyard system``: the backend, this machine's GPUs, CPU and memory, and the cluster's nodes."""

from __future__ import annotations

import typer

from trainyard.cli.output import emit_json, fail


def system(as_json: bool = typer.Option(False, "--json", help="print the report as JSON on stdout")) -> None:
    """What trainyard can run on: local devices, and in cluster mode every node of the cluster."""
    from trainyard.cli.context import cli_context
    from trainyard.cluster.connect import ClusterUnavailable
    from trainyard.jobs.hardware import Hardware
    from trainyard.jobs.system import system_report

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
        state = "alive" if node["alive"] else "DEAD"
        typer.echo(f"node {node['host']} ({node['id'][:8]}) {state}: {node['cpus_in_use']}/{node['cpus']} CPUs, "
                   f"{node['gpus_in_use']}/{len(node['gpus'])} GPUs in use ({gpus})"
                   + (f"; jobs {', '.join(node['jobs'])}" if node["jobs"] else ""))

