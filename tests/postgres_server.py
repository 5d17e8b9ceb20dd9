"""A throwaway PostgreSQL server for the test session, from Debian's postgresql binaries.

The server lives in a temporary folder (data directory and unix socket) and listens on a free
127.0.0.1 port with trust authentication (or on another address of this machine, trusting a
subnet: tests/cluster/test_netns_hosts.py puts it on its namespaces' bridge). PostgreSQL refuses
to run as root, and tests and CI run as root, so there it runs as the ``postgres`` system user
(``runuser``). Each test gets a fresh database from ``PostgresServer.new_database``.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.live_server import free_port

# Durability is worthless for a server that lives one test session; without it CREATE DATABASE
# and every commit are far quicker.
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"


class Unavailable(RuntimeError):
    """PostgreSQL cannot run here; the message says what is missing."""


def find_bin_dir() -> Path:
    """The folder of initdb/pg_ctl: Debian's /usr/lib/postgresql/<version>/bin, or the PATH."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version, reverse=True)
    found = candidates[0] if candidates else shutil.which("initdb")
    if not found:
        raise Unavailable("PostgreSQL is not installed (Debian: apt-get install postgresql); "
                          "the PostgreSQL variants of the store tests need initdb and pg_ctl")
    return Path(found).parent


def _version(path: str) -> int:
    part = Path(path).parent.parent.name
    return int(part) if part.isdigit() else 0


def _as_server_user() -> list[str]:
    """The command prefix that runs a PostgreSQL binary as a user it accepts (never root)."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        raise Unavailable("running as root without runuser: PostgreSQL cannot be started")
    try:
        subprocess.run([runuser, "-u", "postgres", "--", "true"], check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        raise Unavailable(f"running as root and the postgres system user is unusable: {exc}") from exc
    return [runuser, "-u", "postgres", "--"]


def start_server(host: str = "127.0.0.1", trusted: str | None = None) -> PostgresServer:
    """A started server; Unavailable says what is missing here (the binaries, psycopg, a user)."""
    try:
        import psycopg  # noqa: F401  (the ``postgres`` extra)
    except ImportError:
        raise Unavailable("psycopg is not installed (pip install 'trainyard[postgres]')") from None
    return PostgresServer(host, trusted).start()


class PostgresServer:
    """Start with ``start()``, stop with ``stop()``; ``url(db)`` is a SQLAlchemy URL."""

    def __init__(self, host: str = "127.0.0.1", trusted: str | None = None) -> None:
        """``host``: the address it listens on; ``trusted``: a subnet (CIDR) whose clients may
        connect too (initdb's trust covers only the loopback addresses)."""
        self.bin = find_bin_dir()
        self.prefix = _as_server_user()
        self.folder = Path(tempfile.mkdtemp(prefix="trainyard-pg-"))
        self.host, self.trusted = host, trusted
        self.port = free_port()
        self._names = itertools.count()

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        command = [*self.prefix, str(self.bin / tool), *args]
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> PostgresServer:
        if self.prefix:
            shutil.chown(self.folder, "postgres", "postgres")
        data = self.folder / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync", "--locale=C")
        if self.trusted:
            with (data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {self.trusted} trust\n")
        options = f"-k {self.folder} -h {self.host} -p {self.port} {FAST}"
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.folder / "log.txt"),
                  "-w", "-t", "60", "start")
        return self

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database; return its URL."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(f"host={self.host} port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
