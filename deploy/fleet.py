#!/usr/bin/env python3
"""A fleet on this machine: PostgreSQL, N `mcptape proxy` replicas and HAProxy, all on loopback.

    deploy/fleet.py up --config servers.json      # PostgreSQL, 3 replicas, HAProxy on 127.0.0.1:8800
    deploy/fleet.py down

``up`` keeps everything under ``--dir`` (default ``.fleet``): PostgreSQL's data folder
(a private server on 127.0.0.1:``--pg-port``, database ``mcptape``), the token and the
session key (made once, mode 0600, reused), the rendered ``haproxy.cfg`` and each
process's log and pid. The replicas share the token, the key, the config and the
database; each has its name (``replica-1``...) and port (``--port`` + 1...), and
allows the balancer's address as Host. It prints the URL and the token, and exits
(everything keeps running); ``down`` stops it all, ``status`` asks each /health.

For a real team, run the same ``mcptape proxy`` command lines on your machines against
your PostgreSQL (``--db``), with ``deploy/haproxy.cfg`` in front: see the README.
Needs Debian's ``postgresql`` and ``haproxy`` packages, and mcptape with its
``postgres`` extra (``pip install 'mcptape[postgres]'``).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import glob
import http.client
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Fleet:
    """Where a fleet's state lives and how it is reached."""

    home: Path
    port: int = 8800
    pg_port: int = 5433
    replicas: int = 3

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.pg_port}/mcptape"

    def replica_port(self, n: int) -> int:
        return self.port + n

    @property
    def token(self) -> str:
        return _secret(self.home / "token", lambda: secrets.token_urlsafe(32))

    @property
    def key_file(self) -> Path:
        _secret(self.home / "session-keys", lambda: base64.b64encode(secrets.token_bytes(32)).decode())
        return self.home / "session-keys"


def _secret(path: Path, make: object) -> str:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(make() + "\n")  # type: ignore[operator]
    return path.read_text().split()[0]


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    initdb = found[-1] if found else shutil.which("initdb")
    if not initdb:
        sys.exit("deploy/fleet.py: PostgreSQL's server is not installed (apt-get install postgresql)")
    return Path(initdb).resolve().parent


def _as_postgres() -> dict[str, object]:
    # initdb and postgres refuse to run as root.
    return {"user": "postgres", "group": "postgres", "extra_groups": []} if os.geteuid() == 0 else {}


def start_postgres(fleet: Fleet) -> None:
    bindir, data, log = _pg_bin(), fleet.home / "pg", fleet.home / "pg.log"
    run_as = _as_postgres()
    if not data.exists():
        data.mkdir(parents=True)
        if run_as:
            shutil.chown(data, "postgres", "postgres")
        data.chmod(0o700)
        subprocess.run(
            [bindir / "initdb", "-D", data, "-A", "trust", "-U", "postgres"],
            check=True,
            capture_output=True,
            **run_as,
        )  # type: ignore[arg-type]
    if run_as and not log.exists():
        log.touch()
        shutil.chown(log, "postgres", "postgres")
    options = f"-p {fleet.pg_port} -c listen_addresses=127.0.0.1 -k {data} -c max_connections=200"
    subprocess.run(
        [bindir / "pg_ctl", "-D", data, "-o", options, "-w", "-l", log, "start"],
        check=True,
        capture_output=True,
        **run_as,
    )  # type: ignore[arg-type]
    psql = [bindir / "psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(fleet.pg_port), "-U", "postgres"]
    exists = subprocess.run(
        [*psql, "-tAc", "SELECT 1 FROM pg_database WHERE datname = 'mcptape'"],
        capture_output=True,
        text=True,
        check=True,
    )
    if exists.stdout.strip() != "1":
        subprocess.run([*psql, "-c", "CREATE DATABASE mcptape"], check=True, capture_output=True)


def replica_argv(fleet: Fleet, n: int, config: str | None, mcptape: str) -> list[str]:
    """The command line of replica ``n`` (1-based): what a team runs on each machine, too."""
    argv = [mcptape, "proxy", "--listen", f"127.0.0.1:{fleet.replica_port(n)}", "--replica", f"replica-{n}"]
    argv += ["--db", fleet.db, "--session-key-file", str(fleet.key_file)]
    argv += ["--allow-host", f"127.0.0.1:{fleet.port}", "--allow-host", f"localhost:{fleet.port}"]
    return argv + (["--config", config] if config else [])


def start_replica(fleet: Fleet, n: int, config: str | None, mcptape: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MCPTAPE_PROXY_TOKEN": fleet.token}
    log = open(fleet.home / f"replica-{n}.log", "ab")  # noqa: SIM115 - the child keeps it
    process = subprocess.Popen(
        replica_argv(fleet, n, config, mcptape),
        env=env,
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    (fleet.home / f"replica-{n}.pid").write_text(f"{process.pid}\n")
    return process


def render_haproxy(fleet: Fleet) -> Path:
    servers = "\n".join(
        f"    server replica-{n} 127.0.0.1:{fleet.replica_port(n)}" for n in range(1, fleet.replicas + 1)
    )
    text = (HERE / "haproxy.cfg").read_text().replace("{port}", str(fleet.port)).replace("{servers}", servers)
    target = fleet.home / "haproxy.cfg"
    target.write_text(text)
    return target


def start_haproxy(fleet: Fleet) -> None:
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(haproxy).exists():
        sys.exit("deploy/fleet.py: HAProxy is not installed (apt-get install haproxy)")
    cfg = render_haproxy(fleet)
    subprocess.run([haproxy, "-c", "-q", "-f", cfg], check=True)
    subprocess.run([haproxy, "-D", "-f", cfg, "-p", fleet.home / "haproxy.pid"], check=True)


def health(url: str, timeout: float = 2.0) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(url + "/health", timeout=timeout) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    # HTTPException: before the replica listens, a connection to its port (in the ephemeral
    # range) can be given that very port as its own and connect to itself (TCP simultaneous
    # open): the request comes back as the answer, "GET /health HTTP/1.1" as a status line.
    except (OSError, ValueError, http.client.HTTPException):
        return None


class FleetError(RuntimeError):
    """The fleet could not be brought up: what went wrong, in one line."""


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return f": {lines[-1]}" if lines else ""


def wait_healthy(
    urls: list[str],
    timeout: float = 60.0,
    processes: list[tuple[subprocess.Popen[bytes], Path]] | None = None,
) -> None:
    """Wait until every URL's /health says ok; a process of ``processes`` (with its log) that
    exits meanwhile is said at once (a port taken by something else, a database refused)."""
    deadline = time.monotonic() + timeout
    for i, url in enumerate(urls):
        while (answer := health(url)) is None or answer.get("status") != "ok":
            if processes is not None:
                process, log = processes[i]
                if process.poll() is not None:
                    raise FleetError(
                        f"deploy/fleet.py: {url} exited with status {process.returncode} before it "
                        f"answered{_last_line(log)} (log: {log})"
                    )
            if time.monotonic() > deadline:
                raise FleetError(f"deploy/fleet.py: {url}/health did not answer ok within {timeout:g} s")
            time.sleep(0.1)


def up(fleet: Fleet, config: str | None, mcptape: str) -> None:
    fleet.home.mkdir(parents=True, exist_ok=True)
    start_postgres(fleet)
    replicas = [
        (start_replica(fleet, n, config, mcptape), fleet.home / f"replica-{n}.log")
        for n in range(1, fleet.replicas + 1)
    ]
    urls = [f"http://127.0.0.1:{fleet.replica_port(n)}" for n in range(1, fleet.replicas + 1)]
    wait_healthy(urls, processes=replicas)
    start_haproxy(fleet)
    wait_healthy([fleet.url])


def _kill_pidfile(path: Path, sig: int = signal.SIGTERM) -> None:
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().split()[0])
        os.kill(pid, sig)
        for _ in range(100):  # the replica closes its sessions and flushes the recording
            # A replica this very process started (up() then down() in one program, as the
            # tests do) stays a zombie that kill(0) still finds until it is reaped.
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            os.kill(pid, 0)
            time.sleep(0.1)
    path.unlink(missing_ok=True)


def down(fleet: Fleet) -> None:
    _kill_pidfile(fleet.home / "haproxy.pid")
    for pidfile in sorted(fleet.home.glob("replica-*.pid")):
        _kill_pidfile(pidfile)
    data = fleet.home / "pg"
    if data.exists():
        subprocess.run(
            [_pg_bin() / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"],
            capture_output=True,
            **_as_postgres(),
        )  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--config", help="an mcpServers config file the replicas serve")
    parser.add_argument("--dir", default=".fleet", help="where the fleet's state lives (default .fleet)")
    parser.add_argument("--port", type=int, default=8800, help="HAProxy's port; replicas take the next ones")
    parser.add_argument("--pg-port", type=int, default=5433, help="PostgreSQL's port on 127.0.0.1")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument(
        "--mcptape", default=shutil.which("mcptape") or str(Path(sys.executable).parent / "mcptape")
    )
    args = parser.parse_args(argv)
    fleet = Fleet(Path(args.dir).resolve(), args.port, args.pg_port, args.replicas)
    if args.action == "up":
        try:
            up(fleet, args.config, args.mcptape)
        except FleetError as exc:
            sys.exit(str(exc))
        print(
            f"mcptape fleet: {fleet.url}/servers/NAME/mcp (and /sse) through HAProxy, {fleet.replicas} replicas"
        )
        print(
            f"token: {fleet.token}   (send it as 'Authorization: Bearer TOKEN'; also in {fleet.home / 'token'})"
        )
        print(f"recordings: mcptape sessions --db {fleet.db}")
        print(f"stop: {sys.argv[0]} down --dir {args.dir}")
    elif args.action == "down":
        down(fleet)
    else:
        for name, url in [("haproxy", fleet.url)] + [
            (f"replica-{n}", f"http://127.0.0.1:{fleet.replica_port(n)}")
            for n in range(1, fleet.replicas + 1)
        ]:
            print(f"{name}: {json.dumps(health(url))}")


if __name__ == "__main__":
    main()
