"""The ``trainyard`` entry point: serve, train, export, import, classify, evaluate, and the dataset and jobs groups."""

from __future__ import annotations

from trainyard.core.gc_control import imports_without_collection, skip_final_collection

with imports_without_collection():  # a tenth of a second of every command's start-up
    import typer

    from trainyard.cli import datasets, export, inference, jobs, system, train, weights
    from trainyard.cli.errors import UserErrorGroup
    from trainyard.core.errors import UserError
    from trainyard.settings import LOCAL_HOSTS, get_settings

# A command is done once it has printed its answer: not a fifth of a second later.
skip_final_collection()

app = typer.Typer(help="trainyard: turn a folder of images into a trained, deployable network.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  cls=UserErrorGroup)
app.add_typer(datasets.app, name="dataset")
app.add_typer(jobs.app, name="jobs")
app.add_typer(weights.app, name="weights")
train.register(app)
export.register(app)
inference.register(app)
system.register(app)


@app.command()
def serve(host: str = typer.Option(None, help="address to bind (default 127.0.0.1)"),
          port: int = typer.Option(None, help="port (default 5000)")) -> None:
    """Start the web server and the job scheduler."""
    import uvicorn

    from trainyard.web import token_handoff
    from trainyard.web.app import create_app

    settings = get_settings()  # checks the token before anything else
    token_handoff.hand_off()  # re-execs without the token in the environment, when it is there
    handed = token_handoff.take()
    if handed:
        settings = settings.model_copy(update={"auth_token": handed})
    host = host or settings.host
    port = port or settings.port
    if host not in LOCAL_HOSTS and not settings.auth_token:
        raise UserError(f"refusing to bind {host}: anyone who reaches it could run jobs and read your "
                        "images. Set TRAINYARD_AUTH_TOKEN to serve beyond localhost.")
    # The app checks Host headers against the name it is really bound to.
    settings = settings.model_copy(update={"host": host, "port": port})
    app_ = create_app(settings)
    typer.echo(f"trainyard on http://{host}:{port}  (home {settings.home})", err=True)
    _announce_sandbox()
    uvicorn.run(app_, host=host, port=port, log_level="warning")


def _announce_sandbox() -> None:
    """Say once what confines user code (or that nothing does), and warm the network checker."""
    import threading

    from trainyard.core import sandbox
    from trainyard.networks.isolated import CHECKER

    state = sandbox.status()
    typer.echo(f"user code runs confined by {state['mechanism']}" if state["available"]
               else f"WARNING: {state['reason']}", err=True)
    threading.Thread(target=CHECKER.warm_up, name="trainyard-checker-warm-up", daemon=True).start()


if __name__ == "__main__":
    app()
