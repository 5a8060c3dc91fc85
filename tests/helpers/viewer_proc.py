"""Test helper: a real `mcptape ui --port 0` process, its URL read from its output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path


class ViewerProcess:
    """`mcptape ui` on a free port over ``db``; ``url`` is the printed URL (token in its fragment)."""

    def __init__(self, db: Path | str, *extra: str, env: dict[str, str] | None = None) -> None:
        environment = dict(env or os.environ)
        environment.pop("MCPTAPE_UI_TOKEN", None)
        environment["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcptape", "ui", "--port", "0", "--db", str(db), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.stop()
            raise RuntimeError(f"mcptape ui did not print its URL: {self.url!r} {self.stderr_text()!r}")
        self.base, _, fragment = self.url.partition("/#")
        self.token = fragment.removeprefix("token=")
        self._stderr: list[str] = []
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def stderr_text(self) -> str:
        return "".join(getattr(self, "_stderr", []))

    def stop(self) -> int:
        """Ctrl-C, as a person stops it; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=15)
        if hasattr(self, "_reader"):
            self._reader.join(timeout=5)
        return code

    def __enter__(self) -> ViewerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
