"""`mcptape probe` against server-everything directly, behind mcptape's gateway, and behind the npm
and PyPI `mcp-proxy` bridges: the gateway carries everything the server offers, and the probe
finds exactly what each bridge breaks."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from mcptape.client.session import Target
from mcptape.probe.compare import differences
from mcptape.probe.context import FAIL, NOT_OFFERED, PASS
from mcptape.probe.runner import ProbeReport, ProbeSettings, run_probe
from mcptape.probe.scenarios import SCENARIOS, select
from tests.helpers import bridges

# The first run installs the PyPI bridge into a venv of its own (about a minute from PyPI).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# server-everything (TypeScript SDK 1.x, stdio) offers every scenario but these: it has no
# 2026-07-28 (so no input_required), it ignores a batch on stdio, and stdio has no HTTP session.
NOT_OFFERED_BY_EVERYTHING = {"discover-2026-07-28", "input-required", "batch", "resumption", "delete"}
# Its stdio transport refuses any line over 10 MiB (the SDK's ReadBuffer) and exits: a limit of
# the server's, the same through every front end.
SERVER_LIMIT = "large-16mib"
HTTP_ONLY = {"resumption", "delete"}

NPM_BREAKS = {
    # It initializes server-everything with capabilities of its own, not the client's: the
    # tools server-everything lists only to clients that sample, elicit or have roots are gone.
    "sampling",
    "elicitation-form",
    "elicitation-url",
    "roots",
    # It loses the last progress notification of a call in a race with the result.
    "progress",
    # Its client rejects the CreateTaskResult of a task-augmented tools/call.
    "tasks",
}
PYPI_BREAKS = {
    "sampling",
    "elicitation-form",
    "elicitation-url",
    "roots",
    "progress",  # no progress notification reaches the client at all
    "logging",  # log lines the server sends outside a request do not reach the client
    # It advertises only what it forwards: no resources.subscribe, no listChanged, no tasks.
    "resources-subscribe",
    "resources-list-changed",
    "tasks",
}


def _target(description: str, url: str | None = None, argv: list[str] | None = None) -> Target:
    if url is not None:
        return Target(description, url=url, transport="http")
    return Target(description, argv=argv)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The three front ends running, and the probe of each and of the server directly (run at once)."""
    tmp = tmp_path_factory.mktemp("probe")
    config = bridges.everything_config(tmp)
    ports = {name: bridges.free_port() for name in ("gateway", "npm", "pypi")}
    with ExitStack() as stack:
        stack.enter_context(
            bridges.serving(
                bridges.gateway_argv(config, ports["gateway"], tmp / "gw.db"),
                ports["gateway"],
                tmp / "gw.log",
            )
        )
        stack.enter_context(
            bridges.serving(bridges.npm_bridge_argv(ports["npm"]), ports["npm"], tmp / "npm.log")
        )
        stack.enter_context(
            bridges.serving(bridges.pypi_bridge_argv(ports["pypi"]), ports["pypi"], tmp / "pypi.log")
        )
        urls = {
            "gateway": f"http://127.0.0.1:{ports['gateway']}/servers/everything/mcp",
            "npm": f"http://127.0.0.1:{ports['npm']}/mcp",
            "pypi": f"http://127.0.0.1:{ports['pypi']}/mcp",
        }
        targets = {name: _target(name, url=url) for name, url in urls.items()}
        targets["direct"] = _target("direct", argv=bridges.everything_argv())
        settings = ProbeSettings(db=str(tmp / "probe.db"), jobs=6, timeout=30)

        async def everything() -> dict[str, ProbeReport]:
            gate = asyncio.Semaphore(settings.jobs)
            names = list(targets)
            done = await asyncio.gather(
                *(run_probe(targets[n], SCENARIOS, settings, gate=gate) for n in names)
            )
            return dict(zip(names, done, strict=True))

        reports = asyncio.run(everything())
        yield {"reports": reports, "urls": urls, "config": config, "tmp": tmp, "settings": settings}


def _statuses(report: ProbeReport) -> dict[str, str]:
    return {r.scenario.id: r.status for r in report.results}


def _explain(report: ProbeReport) -> str:
    return "\n".join(f"{r.scenario.id}: {r.status}: {r.detail}" for r in report.results)


def test_server_everything_directly_offers_all_but_what_it_lacks(setup: dict[str, Any]) -> None:
    direct = setup["reports"]["direct"]
    statuses = _statuses(direct)
    assert {s for s, v in statuses.items() if v == NOT_OFFERED} == NOT_OFFERED_BY_EVERYTHING, _explain(direct)
    assert {s for s, v in statuses.items() if v == FAIL} == {SERVER_LIMIT}, _explain(direct)
    assert "exited" in direct.by_id()[SERVER_LIMIT].detail


def test_gateway_passes_every_scenario_the_server_offers(setup: dict[str, Any]) -> None:
    gateway = setup["reports"]["gateway"]
    statuses = _statuses(gateway)
    offered = {s.id for s in SCENARIOS} - (NOT_OFFERED_BY_EVERYTHING - HTTP_ONLY) - {SERVER_LIMIT}
    assert {s for s, v in statuses.items() if v == PASS} == offered, _explain(gateway)
    assert statuses[SERVER_LIMIT] == FAIL  # the server behind it exits, as it does directly


def test_gateway_breaks_nothing(setup: dict[str, Any]) -> None:
    reports = setup["reports"]
    diffs = differences(reports["gateway"], reports["direct"])
    assert [d.proxy.scenario.id for d in diffs if d.breaks] == [], _explain(reports["gateway"])
    # What differs is what only HTTP has: passes through the gateway, not offered on stdio.
    assert {d.proxy.scenario.id: (d.proxy.status, d.direct.status) for d in diffs} == {
        s: (PASS, NOT_OFFERED) for s in HTTP_ONLY
    }


def _breaks(setup: dict[str, Any], name: str) -> set[str]:
    reports = setup["reports"]
    return {d.proxy.scenario.id for d in differences(reports[name], reports["direct"]) if d.breaks}


def _progress_is_lost(setup: dict[str, Any], name: str) -> bool:
    """Run the progress scenario again (up to 3 times) against a bridge that loses progress in a race."""
    target = _target(name, url=setup["urls"][name])
    for _ in range(3):
        report = asyncio.run(run_probe(target, select(["progress"]), setup["settings"]))
        if report.results[0].status == FAIL:
            return True
    return False


def test_npm_mcp_proxy_drops_sampling_elicitation_roots_progress_and_tasks(setup: dict[str, Any]) -> None:
    broken = _breaks(setup, "npm")
    npm = setup["reports"]["npm"]
    if "progress" not in broken and _progress_is_lost(setup, "npm"):
        broken.add("progress")  # a race: six concurrent calls show it most of the time, not always
    assert broken == NPM_BREAKS, _explain(npm)
    results = npm.by_id()
    assert results["sampling"].detail.startswith("no trigger-sampling-request tool")
    assert "Invalid result for tools/call" in results["tasks"].detail
    # and what it carries that stdio cannot: batches at 2025-03-26, DELETE, resumption, 2026-07-28
    assert {r.scenario.id for r in npm.results if r.status == PASS} >= {"batch", "delete", "resumption"}


def test_pypi_mcp_proxy_drops_sampling_elicitation_progress_and_more(setup: dict[str, Any]) -> None:
    pypi = setup["reports"]["pypi"]
    assert _breaks(setup, "pypi") == PYPI_BREAKS, _explain(pypi)
    results = pypi.by_id()
    assert results["progress"].detail.startswith("0 of 24 progress")
    # It answers a tools/call in JSON once the tool is done, holding the POST's headers till
    # then: mcptape's link sent the cancellation only after that answer ("did not reach it").
    # The next message now waits for those headers 2 s at most, and the cancellation lands.
    assert results["cancellation"].status == PASS, results["cancellation"].detail
    assert results["resumption"].status == NOT_OFFERED  # it answers with JSON, not a stream


def test_probe_sessions_are_recorded_with_mode_probe(setup: dict[str, Any]) -> None:
    import sqlite3

    with sqlite3.connect(setup["tmp"] / "probe.db") as db:
        rows = db.execute("select mode, name from sessions").fetchall()
    assert len(rows) == 4 * len(SCENARIOS)  # handshake scenarios open one session each
    assert {mode for mode, _ in rows} == {"probe"}
    assert {name for _, name in rows} == {f"probe:{s.id}" for s in SCENARIOS}


def test_call_negotiates_through_the_pypi_bridge(setup: dict[str, Any], tmp_path: Path) -> None:
    """A Python SDK 1.x server answers server/discover with 400 and the id of a session it ends at
    once: the initialize that follows must not carry it (it was answered 404)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptape",
            "call",
            "--no-record",
            "-m",
            "server/info",
            "--url",
            setup["urls"]["pypi"],
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["negotiatedWith"] == "initialize"


def _cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCPTAPE_DB": str(tmp / "cli.db")}
    return subprocess.run(
        [sys.executable, "-m", "mcptape", "probe", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_cli_direct_lists_what_the_bridge_breaks_in_80_columns(setup: dict[str, Any], tmp_path: Path) -> None:
    proc = _cli(
        setup["urls"]["npm"],
        "--direct",
        "everything",
        "--config",
        str(setup["config"]),
        "--only",
        "sampling",
        "--only",
        "tool-call",
        tmp=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), proc.stdout
    assert lines[0].split() == ["scenario", "proxy", "direct", "why"]
    assert lines[2].split()[:4] == ["sampling", "BREAKS", "not", "offered"]
    assert len(lines) == 4  # header, rule, the one difference, the summary: tool-call is alike
    assert lines[-1] == "the proxy breaks 1 of 2 scenarios: sampling"


def test_cli_junit_and_sarif(setup: dict[str, Any], tmp_path: Path) -> None:
    url = setup["urls"]["pypi"]
    junit = _cli(url, "--only", "progress", "--only", "ping", "--only", "discover-*", "--junit", tmp=tmp_path)
    assert junit.returncode == 1, junit.stderr
    suite = ET.fromstring(junit.stdout)
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["progress"]
    sarif = _cli(url, "--only", "ping", "--only", "discover-*", "--sarif", tmp=tmp_path)
    assert sarif.returncode == 0, sarif.stderr
    log = json.loads(sarif.stdout)
    assert log["version"] == "2.1.0"
    kinds = {r["ruleId"]: (r["kind"], r["level"]) for r in log["runs"][0]["results"]}
    assert kinds == {"ping": ("pass", "none"), "discover-2026-07-28": ("notApplicable", "none")}


def test_cli_unreachable_target_is_one_line_and_status_2(tmp_path: Path) -> None:
    port = bridges.free_port()
    proc = _cli(f"http://127.0.0.1:{port}/mcp", "--connect-timeout", "5", tmp=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("mcptape: error: cannot probe"), proc.stderr


def test_cli_probes_a_legacy_sse_endpoint(setup: dict[str, Any], tmp_path: Path) -> None:
    """The gateway's legacy SSE endpoint: `auto` falls back to SSE on its 405 (a JSON-RPC body)."""
    url = setup["urls"]["gateway"].removesuffix("/mcp") + "/sse"
    proc = _cli(url, "--only", "ping", "--only", "sampling", "--only", "delete", "--json", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    verdicts = {s["id"]: (s["status"], s["detail"]) for s in json.loads(proc.stdout)["scenarios"]}
    assert verdicts["ping"][0] == verdicts["sampling"][0] == PASS
    assert verdicts["delete"] == (NOT_OFFERED, "streamable HTTP only")
