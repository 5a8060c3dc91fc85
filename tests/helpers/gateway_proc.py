"""Test helper: a real `mcptape proxy` process on a free loopback port."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.helpers.paths import MCPTAPE


class GatewayProcess:
    """`mcptape proxy --listen 127.0.0.1:0 ...`; ``base`` is its URL once it is listening."""

    def __init__(
        self,
        db: Path,
        config: dict[str, object] | None,
        *extra: str,
        env: dict[str, str] | None = None,
        tmp: Path,
    ) -> None:
        self.db = db
        args = [*MCPTAPE, "proxy", "--listen", "127.0.0.1:0", "--db", str(db), *extra]
        if config is not None:
            path = tmp / "gateway-config.json"
            path.write_text(json.dumps({"mcpServers": config}))
            args += ["--config", str(path)]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
        )
        self.stderr = ""
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(30):
            self.stop()
            raise RuntimeError(f"the gateway did not start: {self.stderr}")
        found = re.search(r"listening on (http://\S+)", self.stderr)
        if found is None:
            raise RuntimeError(f"the gateway did not start: {self.stderr}")
        self.base = found.group(1)
        token = re.search(r"token \(shown once.*\): (\S+)", self.stderr)
        self.token = token.group(1) if token else None

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line.decode(errors="replace")
            if "listening on" in self.stderr and (
                "token" in self.stderr or "no token" in self.stderr or "/servers/" in line.decode()
            ):
                self._ready.set()
        self._ready.set()

    def url(self, name: str, kind: str = "mcp") -> str:
        return f"{self.base}/servers/{name}/{kind}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self._reader.join(5)
        time.sleep(0)
        return rc
