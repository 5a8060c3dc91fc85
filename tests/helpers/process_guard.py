"""The fast tier's guard: every way the stdlib starts a process, refused and remembered while installed."""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess
from typing import Any


class ProcessInFastTier(RuntimeError):
    """A test without the ``slow`` mark tried to start a process."""


class ProcessGuard:
    """Refuses every way of starting a process while installed, and remembers what was tried."""

    # (owner, attribute): every route to a new process in the stdlib ends in one of these.
    ROUTES: tuple[tuple[Any, str], ...] = (
        (subprocess.Popen, "_execute_child"),  # subprocess.*, asyncio's subprocesses
        (_posixsubprocess, "fork_exec"),  # multiprocessing's spawn and forkserver
        (os, "fork"),
        (os, "forkpty"),
        (os, "posix_spawn"),
        (os, "posix_spawnp"),
        (os, "system"),
    )

    def __init__(self) -> None:
        self.tried: list[str] = []
        self.reported = 0
        self._saved: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        for owner, name in self.ROUTES:
            original = getattr(owner, name, None)
            if original is not None:
                self._saved.append((owner, name, original))
                setattr(owner, name, self._refuse(name))

    def uninstall(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def _refuse(self, route: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            argv = next((a for a in args if isinstance(a, list | tuple | str | bytes)), "?")
            self.tried.append(f"{route}({argv!r})"[:300])
            raise ProcessInFastTier(f"a test without @pytest.mark.slow started a process: {route}")

        return refuse
