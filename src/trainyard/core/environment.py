"""The environment handed to processes the server starts: its secrets stay behind.

Jobs, network checks and model workers run user code (custom networks, imported archives);
none of them needs the server's access token, so none of them gets it.
"""

from __future__ import annotations

import os

SECRET_VARIABLES = ("TRAINYARD_AUTH_TOKEN",)


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without the secret variables, plus ``overrides``."""
    env = {key: value for key, value in os.environ.items() if key not in SECRET_VARIABLES}
    env.update(overrides)
    return env
