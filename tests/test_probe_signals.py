"""`mcptape probe` stopped by a signal: every server it started is shut down, exit 128+N, one line."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.debug_script import wait_until_gone
from tests.helpers.signalling import WAIT_S, Signalled, child_pids

pytestmark = pytest.mark.slow  # a probe process and the servers it starts

# tiny_mcp that outlives its stdin: a server left behind would run on after the probe.
LINGERING = [sys.executable, "-m", "tests.servers.lingering_mcp"]


def _lingering(pid: int) -> list[int]:
    found = []
    for child in child_pids(pid):
        try:
            if b"lingering_mcp" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            continue
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_probe_shuts_its_servers_down_and_exits_128_plus_n(
    tmp_path: Path, signum: signal.Signals
) -> None:
    probe = Signalled(
        "probe",
        "--no-record",
        "--",
        *LINGERING,
        str(tmp_path / "report.json"),
        stdout_file=tmp_path / "out.txt",
    )
    probe.wait_for("scenarios")
    deadline = time.monotonic() + WAIT_S  # a bound on a hang, not a timing assertion
    while not (servers := _lingering(probe.proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert servers, "the probe started no server"

    probe.proc.send_signal(signum)
    code, stderr = probe.finish()

    assert code == 128 + signum, stderr
    assert "Traceback" not in stderr
    assert f"mcptape: stopped by {signum.name}" in stderr
    assert all(wait_until_gone(pid) for pid in servers)
