"""The server's connection to Ray: a child process that holds Ray's driver, which the server can
lose and make again.

Ray's driver ends the process it runs in about a minute after it loses the cluster's head (the
GCS), so a server that called ``ray.init`` itself exited with its head. Here the driver lives in
``python -m trainyard.cluster.agent``, started on the first question and asked over its pipes
(one JSON line each way). Before every question the server probes the head's TCP port: while
nobody answers there, it drops the agent and the question fails at once with
`ClusterUnavailable` (a 503 that names RAY_ADDRESS); once a head answers again, the next
question starts a fresh agent that joins it. An agent that dies, or does not answer within its
time, is dropped the same way. The agent dies with the server (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

from trainyard.cluster.connect import ClusterUnavailable, address, probe

JOIN_S = 30.0  # the agent's ray.init (connect.connect's own bound)
ANSWER_S = 15.0  # a question the agent has not answered by then: it is taken for lost


class RayAgent:
    """One agent process at a time, asked one question at a time."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._joined: str | None = None  # the RAY_ADDRESS the running agent joined
        self._lock = threading.Lock()

    @property
    def connected(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def ask(self, name: str, *args: Any, timeout_s: float = ANSWER_S) -> Any:
        """``queries.ASKED[name](ray, *args)`` in the agent; ClusterUnavailable when Ray is gone."""
        value = address()
        with self._lock:
            try:
                probe(value)
            except ClusterUnavailable as exc:
                self.drop()
                raise ClusterUnavailable(f"{exc} (the server reconnects by itself once a head answers)") from None
            if self.connected and self._joined != value:
                self.drop()  # RAY_ADDRESS names another cluster now: join that one
            if not self.connected:
                self._start(value)
            answer = self._exchange({"ask": name, "args": list(args)}, timeout_s)
            if "error" in answer:
                self.drop()  # Ray failed under it: the next question joins afresh
                raise ClusterUnavailable(answer["error"])
        return answer["value"]

    def _start(self, value: str) -> None:
        self._proc = subprocess.Popen([sys.executable, "-m", "trainyard.cluster.agent"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=os.environ.copy(), bufsize=0)
        answer = self._exchange(None, JOIN_S + 5)  # its first line: joined, or why not
        if "error" in answer:
            self.drop()
            raise ClusterUnavailable(answer["error"])
        self._joined = value

    def _exchange(self, question: dict | None, timeout_s: float) -> dict:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            if question is not None:
                proc.stdin.write((json.dumps(question) + "\n").encode())
                proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
            line = proc.stdout.readline() if ready else b""
        except OSError:
            line = b""
        if not line:
            self.drop()
            what = "did not answer" if proc.poll() is None else "was lost"
            raise ClusterUnavailable(f"the connection to the Ray cluster at RAY_ADDRESS={address()} {what} "
                                     "(its head may have gone); the server reconnects by itself once a head answers")
        return json.loads(line)

    def drop(self) -> None:
        """End the agent (if any); the next question starts a fresh one."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
        if proc is not None:
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()


def serve() -> None:
    """The agent: join Ray, say so, then answer questions from stdin until it closes."""
    from trainyard.cluster.connect import connect
    from trainyard.cluster.queries import ASKED
    from trainyard.core.environment import die_with_parent

    die_with_parent()
    out = os.fdopen(os.dup(1), "w")  # the answers' own descriptor: whatever Ray prints goes to stderr
    os.dup2(2, 1)
    try:
        ray = connect(JOIN_S)
    except ClusterUnavailable as exc:
        out.write(json.dumps({"error": str(exc)}) + "\n")
        out.flush()
        return
    out.write(json.dumps({"joined": time.time()}) + "\n")
    out.flush()
    for line in sys.stdin:
        question = json.loads(line)
        try:
            answer = {"value": ASKED[question["ask"]](ray, *question["args"])}
        except ClusterUnavailable as exc:
            answer = {"error": str(exc)}
        except Exception as exc:  # Ray failing under us: the server hears why, the agent goes on
            answer = {"error": f"the Ray cluster at RAY_ADDRESS={address()} failed a query: "
                               f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    serve()
    sys.stdout.flush()
    os._exit(0)  # no waiting on Ray's exit hooks
