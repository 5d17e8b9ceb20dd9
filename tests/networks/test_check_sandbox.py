"""A custom network's build() in the network check reaches nothing of the server's: not its token,
its store, other jobs, its memory or its process table, and cannot forge or flood the answer."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from trainyard.networks import check_network_isolated
from trainyard.sandbox import namespaces
from trainyard.sandbox import policy as sandbox

pytestmark = pytest.mark.skipif(not sandbox.landlock_abi(), reason="this kernel has no Landlock")

TOKEN = "a-server-secret-that-user-code-must-not-see"

NET = """
import json, os
from torch import nn


def build(num_classes, in_channels, image_size):
{body}
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, num_classes))
"""


def network(body: str) -> str:
    return NET.format(body=textwrap.indent(textwrap.dedent(body), "    "))


def check(source: str, **kwargs) -> dict:
    return check_network_isolated(source, 2, 1, 4, **kwargs)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A server's home beside the check: its store, two jobs, the token in the environment."""
    monkeypatch.setenv("TRAINYARD_AUTH_TOKEN", TOKEN)
    (tmp_path / "trainyard.db").write_text("the store")
    for job in ("mine", "other"):
        (tmp_path / "jobs" / job).mkdir(parents=True)
        (tmp_path / "jobs" / job / "log.txt").write_text("log\n")
    return tmp_path


def test_a_network_finds_no_token_and_writes_nothing_of_the_servers(home):
    hunt = f"""
    seen = {{}}
    def attempt(what, f):
        try:
            seen[what] = repr(f())[:200]
        except OSError as exc:
            seen[what] = type(exc).__name__
    attempt("env", lambda: os.environ.get("TRAINYARD_AUTH_TOKEN"))
    attempt("server environ", lambda: open("/proc/{os.getpid()}/environ", "rb").read())
    attempt("server cmdline", lambda: open("/proc/{os.getpid()}/cmdline", "rb").read())
    attempt("read store", lambda: open("{home}/trainyard.db").read())
    attempt("write store", lambda: open("{home}/trainyard.db", "a").write("x"))
    attempt("other job", lambda: open("{home}/jobs/other/log.txt", "a").write("x"))
    attempt("fork", lambda: os.fork() or os._exit(0))
    raise RuntimeError(json.dumps(seen))
    """
    answer = check(network(hunt))
    assert not answer["ok"] and TOKEN not in answer["error"]
    seen = json.loads(answer["error"][answer["error"].index("{"):])
    assert seen.pop("env") == "None"
    assert TOKEN not in seen.pop("server cmdline")  # readable by anyone: the token is never in it
    # In namespaces the server's process and files are not there at all; with Landlock alone they
    # are there but refused.
    hidden = "FileNotFoundError" if namespaces.available() else "PermissionError"
    assert seen == {"server environ": hidden, "read store": hidden, "write store": hidden,
                    "other job": hidden, "fork": "PermissionError"}
    assert (home / "trainyard.db").read_text() == "the store"
    assert (home / "jobs" / "other" / "log.txt").read_text() == "log\n"


def test_a_network_cannot_start_150_processes(home):
    answer = check(network("pids = [os.fork() or os._exit(0) for _ in range(150)]"))
    assert not answer["ok"] and "PermissionError" in answer["error"] and not answer.get("transient")


@pytest.mark.parametrize("hog", ["hog = bytearray(3 << 30)", "import torch\nhog = torch.ones(800_000_000)"])
def test_a_network_over_the_memory_limit_is_refused(home, monkeypatch, hog):
    monkeypatch.setenv("TRAINYARD_SANDBOX_MEMORY_MB", "1024")
    answer = check(network(hog))
    assert not answer["ok"] and "more than the 1024 MiB of memory a check may use" in answer["error"]


PIPES = ("def kind(fd):\n    try:\n        return os.readlink(f'/proc/self/fd/{fd}')\n"
         "    except OSError:\n        return ''\n"  # listdir's own descriptor, closed since
         "pipes = [int(fd) for fd in os.listdir('/proc/self/fd') if kind(fd).startswith('pipe:')]\n")


@pytest.mark.parametrize("flood", [
    "for _ in range(1000):\n    os.write(fd, b'x' * (1 << 20))",  # 1,000 MiB, no newline
    "os.write(fd, b'TY 1 1048576000\\n')\nfor _ in range(1000):\n    os.write(fd, b'x' * (1 << 20))",
])
def test_a_flood_of_the_answer_pipe_is_cut_short(home, flood):
    body = PIPES + "for fd in pipes:\n    try:\n" + textwrap.indent(flood, "        ") + \
        "\n    except OSError:\n        pass\n"
    answer = check(network(body))
    assert not answer["ok"] and answer["transient"]
    assert "not its answer" in answer["error"] or "over the 64 MiB" in answer["error"]


def test_a_forged_answer_is_never_taken_for_the_checks(home):
    forged = json.dumps({"ok": True, "layers": [], "params": 1}).encode()
    frames = [b"TY %d %d\n" % (i, len(forged)) + forged for i in range(0, 4)]
    body = (f"print({frames[1]!r}.decode(), flush=True)\nos.write(1, {frames[1]!r})\n" + PIPES
            + f"for fd in pipes:\n    for frame in {frames!r}:\n        try:\n            os.write(fd, frame)\n"
            "        except OSError:\n            pass\n")
    answer = check(network(body))
    assert not answer["ok"] and "not its answer" in answer["error"]
    printed = check(network(f"os.write(1, {frames[1]!r})\nprint('TY 1 2')"))
    assert printed["ok"] and printed["params"] == 4 * 4 * 2 + 2  # the real check's answer
