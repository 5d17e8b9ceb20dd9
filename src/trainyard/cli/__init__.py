"""The ``trainyard`` command line (Typer): ``noun verb`` commands, ``--json`` where they report."""
