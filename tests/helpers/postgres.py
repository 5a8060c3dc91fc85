"""Test helper: a private, throw-away PostgreSQL server on a Unix socket, one per test module.

A test module starts one server (module-scoped) and gives each test a database of its
own, so tests never see each other's rows::

    @pytest.fixture(scope="module")
    def postgres() -> Iterator[Postgres]:
        with private_server() as server:
            yield server

    def test_something(postgres: Postgres) -> None:
        url = postgres.url(postgres.create_database())  # postgresql+psycopg://postgres@/db_1?host=...

The server listens on no TCP port (``listen_addresses`` is empty), trusts local
connections and skips fsync. :func:`private_server` skips the test only when no
PostgreSQL server binaries are installed, and fails it then under ``.ci/run`` (which
installs the Debian package ``postgresql``); any other failure to start is an error,
with the server's log.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SUPERUSER = "postgres"
_ports = itertools.count(int(os.getpid()) % 500 * 10)
_databases = itertools.count(1)


def postgres_bin() -> Path | None:
    """The folder of initdb, pg_ctl and psql (Debian keeps them out of PATH), None when absent."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    initdb = found[-1] if found else shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _version(path: str) -> int:
    folder = Path(path).parent.parent.name
    return int(folder) if folder.isdigit() else 0


class Postgres:
    """A throw-away PostgreSQL server listening on a Unix socket in its own temporary folder."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.home = Path(tempfile.mkdtemp(prefix="mcptape-pg-"))
        # initdb refuses to run as root: run the server as the postgres account then.
        self.run_as: dict[str, Any] = {}
        if os.geteuid() == 0:
            self.run_as = {"user": SUPERUSER, "group": SUPERUSER, "extra_groups": []}
            shutil.chown(self.home, SUPERUSER, SUPERUSER)
        self.data = self.home / "data"
        self.log = self.home / "log"
        # The port only names the socket file (.s.PGSQL.PORT) and the shared memory key.
        self.port = str(55000 + next(_ports) % 5000)
        try:
            self._run([str(bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", SUPERUSER])
            self.start()
        except BaseException:
            shutil.rmtree(self.home, ignore_errors=True)
            raise

    def start(self) -> None:
        """Start the server (again, after :meth:`halt`) and wait until it accepts connections."""
        options = f"-p {self.port} -k {self.home} -c listen_addresses= -c fsync=off -c max_connections=50"
        self._pg_ctl("-o", options, "-w", "-l", str(self.log), "start")

    def halt(self) -> None:
        """Stop the server at once, keeping its data: :meth:`start` brings it back."""
        self._pg_ctl("-m", "immediate", "-w", "stop")

    def _pg_ctl(self, *args: str) -> None:
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), *args])

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, **self.run_as)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr}{done.stdout}\n{log}")

    def url(self, database: str = SUPERUSER) -> str:
        """The SQLAlchemy URL of ``database`` for the psycopg driver, over the Unix socket."""
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.home}&port={self.port}"

    def connect(self, database: str = SUPERUSER) -> Any:
        """A psycopg connection in autocommit mode (for set-up and checks outside mcptape)."""
        import psycopg

        return psycopg.connect(
            host=str(self.home), port=self.port, user=SUPERUSER, dbname=database, autocommit=True
        )

    def query(self, database: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """The rows of one query on ``database``, read with psycopg (not through mcptape)."""
        with self.connect(database) as conn:
            return conn.execute(sql, params).fetchall()

    def create_database(self) -> str:
        """Create a new, empty database and return its name (one per test: no shared rows)."""
        name = f"db_{next(_databases)}"
        with self.connect() as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def psql(self, *args: str, stdin: str | None = None, database: str = SUPERUSER) -> str:
        """Run psql on ``database``; fails the test when psql fails."""
        argv = [str(self.bindir / "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-q"]
        argv += ["-h", str(self.home), "-p", self.port, "-U", SUPERUSER, "-d", database]
        done = subprocess.run([*argv, *args], input=stdin, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def stop(self) -> None:
        """Stop the server at once and delete its folder."""
        try:
            self.halt()
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


# Set by .ci/run, which installs PostgreSQL: there, a missing server is a failure, not a skip.
REQUIRED_ENV = "MCPTAPE_TESTS_NEED_POSTGRES"
MISSING = "no PostgreSQL server programs (initdb, pg_ctl): apt-get install postgresql, as the README says"


@contextlib.contextmanager
def private_server() -> Iterator[Postgres]:
    """Start a server for the ``with`` block; skip the test when PostgreSQL is not installed
    (fail it under .ci/run, which installs it: nothing may be skipped in CI)."""
    bindir = postgres_bin()
    if bindir is None:
        if os.environ.get(REQUIRED_ENV):
            pytest.fail(f"{MISSING} (${REQUIRED_ENV} is set)")
        pytest.skip(MISSING)
    server = Postgres(bindir)
    try:
        yield server
    finally:
        server.stop()
