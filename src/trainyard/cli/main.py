"""The ``trainyard`` entry point: serve, train, export, import, classify, evaluate, and the dataset and jobs groups.

Each command's module is imported when that command runs (cli/lazy.py): ``trainyard --help``,
a command's ``--help`` and a mistyped command answer in about the time Python takes to import
typer and rich.
"""

from __future__ import annotations

from trainyard.core.gc_control import imports_without_collection, skip_final_collection

with imports_without_collection():  # a tenth of a second of every command's start-up
    import typer

    from trainyard.cli.lazy import Lazy, LazyGroup

# A command is done once it has printed its answer: not a fifth of a second later.
skip_final_collection()


class TrainyardGroup(LazyGroup):
    lazy = {
        "dataset": Lazy("trainyard.cli.datasets", "app", "Build image-classification and object-detection datasets."),
        "train": Lazy("trainyard.cli.train", "train",
                      "Train a classifier or a detector. Runs here with a progress bar unless --submit."),
        "jobs": Lazy("trainyard.cli.jobs", "app",
                     "Look after jobs: list, show, abort, delete, resume, compare, tag, note."),
        "classify": Lazy("trainyard.cli.inference", "classify",
                         "Classify images: the top classes with their confidences, preprocessed as in training."),
        "detect": Lazy("trainyard.cli.detect", "detect",
                       "Detect objects in images: boxes with labels and scores, in each image's own pixels."),
        "segment": Lazy("trainyard.cli.segment", "segment",
                        "Segment images: one index-PNG mask per image, at its size, named by its stem."),
        "evaluate": Lazy("trainyard.cli.inference", "evaluate",
                         "Evaluate a model on its dataset's validation or test split (a detector: mAP; a "
                         "segmenter: mIoU)."),
        "export": Lazy("trainyard.cli.export", "export",
                       "Write one archive that runs the model anywhere: its network in one format (ONNX by "
                       "default, checked against PyTorch), safetensors, labels, mean, scripts."),
        "import": Lazy("trainyard.cli.export", "import_archive",
                       "Import an exported archive as a model, to classify with or fine-tune from (--pretrained)."),
        "weights": Lazy("trainyard.cli.weights", "app",
                        "Pretrained weights: list, pull (download), import, remove."),
        "users": Lazy("trainyard.cli.users", "app",
                      "Accounts: add, list, disable, set-role, token, revoke."),
        "audit": Lazy("trainyard.cli.audit", "audit",
                      "The audit log: who did what, to which item, when and from where, newest first."),
        "login": Lazy("trainyard.cli.login", "login",
                      "Act as the user of a personal API token in every later command."),
        "logout": Lazy("trainyard.cli.login", "logout", "Forget the token of `trainyard login`."),
        "system": Lazy("trainyard.cli.system", "system",
                       "What trainyard can run on: local devices, and in cluster mode every node of the cluster."),
    }


app = typer.Typer(help="trainyard: turn a folder of images into a trained, deployable network.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None, cls=TrainyardGroup)


@app.callback()
def main() -> None:
    # A callback keeps `app` a group: typer turns an app of one command (serve, the only one
    # defined here) into that command. It runs before every command: the umask first, before
    # any file of the process (core/home.py: a home no other account reads).
    from trainyard.core import home

    home.restrict_process()


@app.command()
def serve(host: str = typer.Option(None, help="address to bind (default 127.0.0.1)"),
          port: int = typer.Option(None, help="port (default 5000)")) -> None:
    """Start the web server and the job scheduler."""
    import uvicorn

    from trainyard.core.errors import UserError
    from trainyard.settings import LOCAL_HOSTS, get_settings
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
    # The app writes its token for the CLI of this home (cli/remote.py), readable by this user only.
    app_ = create_app(settings, publish_token=True)
    token = app_.state.auth_token
    shown = "[::1]" if host == "::1" else host
    typer.echo(f"trainyard on http://{shown}:{port}  (home {settings.home})", err=True)
    if not settings.auth_token:  # a token of the user's own is not printed: they know it
        typer.echo(f"open http://{shown}:{port}/?token={token}", err=True)
    _announce_sandbox()
    # SIGTERM ends it within the grace period, however long its requests would still take.
    uvicorn.run(app_, host=host, port=port, log_level="warning",
                timeout_graceful_shutdown=max(1, int(settings.abort_grace_s)))


def _announce_sandbox() -> None:
    """Say once what confines user code (or that nothing does), and warm the network checker."""
    import threading

    from trainyard.networks.isolated import CHECKER
    from trainyard.sandbox import policy as sandbox

    state = sandbox.status()
    typer.echo(f"user code runs confined by {state['mechanism']}" if state["available"]
               else f"WARNING: {state['reason']}", err=True)
    if state["available"] and not state["namespaces"]:  # Landlock alone: say what is missing
        typer.echo(f"WARNING: {state['reason']}", err=True)
    if state["available"] and not state["rank_network"]["held"]:
        typer.echo(f"WARNING: {state['rank_network']['reason']}", err=True)
    threading.Thread(target=CHECKER.warm_up, name="trainyard-checker-warm-up", daemon=True).start()


if __name__ == "__main__":
    app()
