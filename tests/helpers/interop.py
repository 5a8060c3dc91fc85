"""Test helper: the reference TypeScript client (tests/clients/ts_steps.mjs) running a list of steps."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from tests.helpers.paths import ROOT

TS_STEPS = ROOT / "tests" / "clients" / "ts_steps.mjs"


def ts_steps(steps: list[dict[str, Any]], *target: str, timeout: float = 120) -> dict[str, Any]:
    """Run the TypeScript SDK client over ``target`` (``stdio CMD...``, ``http URL [TOKEN]``, ``sse URL [TOKEN]``)."""
    node = shutil.which("node")
    assert node, "node is not installed"
    proc = subprocess.run(
        [node, str(TS_STEPS), json.dumps(steps), *target], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))
