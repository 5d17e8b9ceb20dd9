"""``python -m trainyard.core.tethered PARENT_PID COMMAND...``: run COMMAND, killed with its parent.

A foreground job must not outlive its command even when the command is killed with SIGKILL,
which it cannot catch. This arms PR_SET_PDEATHSIG (core/environment.die_with_parent), which
survives ``exec``, and then becomes COMMAND: the job's process, or torchrun, whose ranks arm it
in their turn. Exec'ing a program (torchrun) is why it is a command and not a preexec function,
which is not safe in a process with threads (a CLI's progress bar has one).
"""

from __future__ import annotations

import os
import sys

from trainyard.core.environment import die_with_parent

EXIT_PARENT_GONE = 1


def command(parent_pid: int, argv: list[str]) -> list[str]:
    """``argv``, run so that it dies with the process ``parent_pid``."""
    return [sys.executable, "-m", __name__, str(parent_pid), *argv]


def main(args: list[str]) -> None:
    parent, *argv = args
    die_with_parent(int(parent), code=EXIT_PARENT_GONE)  # exits if the parent died already
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
