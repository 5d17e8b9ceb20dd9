"""Job ids: sortable by creation time and readable, like DIGITS's 20150401-123456-abcd."""

import secrets
import time


def new_job_id() -> str:
    """Return an id such as ``20261130-045823-3fa9`` (UTC time, then 4 random hex digits)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return f"{stamp}-{secrets.token_hex(2)}"
