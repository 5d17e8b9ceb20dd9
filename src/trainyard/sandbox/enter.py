"""``python -m trainyard.sandbox.enter POLICY_JSON -- COMMAND...``: confine, then exec COMMAND.

The inner step of `trainyard.sandbox.namespaces.command`: run inside bwrap's namespaces (or
alone where there are none), it applies the policy's second layer to itself (sandbox/policy.py:
rlimits, uid drop, no_new_privs, Landlock, seccomp) and becomes the command. SIGTERM, SIGINT and
SIGHUP are put back to their defaults first: a training job's supervisor starts bwrap with them
ignored, so that an abort (SIGTERM to the job's process group) stops the job, not bwrap.
"""

from __future__ import annotations

import os
import signal
import sys

from trainyard.sandbox.policy import Policy, enter


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: python -m trainyard.sandbox.enter POLICY_JSON -- COMMAND...")
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    enter(Policy.from_json(argv[0]))
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
