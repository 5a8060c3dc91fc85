"""The fault matrix: what the TypeScript and Python SDK clients do under each fault mcptape injects.

Each cell runs one client (tests/clients/ts_faults.mjs, tests/clients/py_faults.py) through
mcptape with one fault against tests/servers/fault_target.py: over stdio (``mcptape record
--fault ...``) and over streamable HTTP (``mcptape proxy --fault ...``). The client calls
``count`` (progress notifications, then its result), ``echo`` and ``add``, each with a
request timeout of :data:`TIMEOUT_MS`; the fault touches ``echo``'s answer (``reorder``:
``count``'s progress). :func:`behaviour` turns a run into the facts the table states, with
nothing that depends on timing but what the fault is about. ``scripts/fault_table`` writes
docs/faults.md from it; tests/test_faults_clients.py checks the doc against fresh runs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.paths import MCPTAPE, ROOT

TIMEOUT_MS: Final = 8000
# The TypeScript SDK notices a closed stdout only when the process behind it exits: after a
# cut, mcptape exits once the recording is written, which a loaded machine may make slow.
CUT_STDIO_TIMEOUT_MS: Final = 30000
SETTLE_MS: Final = 1000  # after each call: what the SDK reports late (reconnections, late progress)
DELAY_MS: Final = 400
TARGET: Final = [sys.executable, str(ROOT / "tests" / "servers" / "fault_target.py")]
# The fault as the table names it, and the action its rule takes. Each fault touches a tool
# of its own (echo_drop, echo_cut, ...): one set of rules serves every run, and one gateway
# every HTTP run. ``reorder`` touches the progress notifications of ``count``.
FAULTS: Final = {
    f"delay:{DELAY_MS}": f"delay:{DELAY_MS}",
    "drop": "drop",
    "duplicate": "duplicate",
    "error:-32603": "error:-32603",
    "timeout": "timeout",
    "cut": "cut",
    "malformed": "malformed",
    "reorder": "reorder",
}
CLIENTS: Final = {
    "TypeScript SDK": ["node", str(ROOT / "tests" / "clients" / "ts_faults.mjs")],
    "Python SDK": [sys.executable, str(ROOT / "tests" / "clients" / "py_faults.py")],
}
TRANSPORTS: Final = ("stdio", "http")
WARM_UP: Final = {"name": "add", "arguments": {"a": 1, "b": 2}}


def tool(fault: str) -> str:
    return "echo_" + fault.split(":")[0]


def rules() -> list[str]:
    """The --fault flags of every run."""
    out = ["notifications/progress=reorder"]
    out += [f"tools/call:{tool(f)}={action}" for f, action in FAULTS.items() if f != "reorder"]
    return out


def timeout_ms(fault: str, transport: str) -> int:
    return CUT_STDIO_TIMEOUT_MS if (fault, transport) == ("cut", "stdio") else TIMEOUT_MS


def plan(fault: str, transport: str) -> dict[str, Any]:
    """The client's calls: a first call (the recorder's store opens meanwhile), the faulted one, one more."""
    if fault == "reorder":
        faulted: dict[str, Any] = {"name": "count", "arguments": {"n": 3}, "progress": True}
    else:
        faulted = {"name": tool(fault), "arguments": {"text": "hi"}}
    return {
        "calls": [WARM_UP, faulted, WARM_UP],
        "timeoutMs": timeout_ms(fault, transport),
        "settleMs": SETTLE_MS,
    }


def _flags() -> list[str]:
    """The --fault options of every run."""
    return [arg for rule in rules() for arg in ("--fault", rule)]


@dataclass(frozen=True)
class Behaviour:
    """What one client did under one fault, as the table says it."""

    call: str  # the faulted call: how it ended
    reports: str  # what the SDK reported beside it (onerror, its log)
    after: str  # the next call: whether the session survived

    def cell(self) -> str:
        parts = [self.call]
        if self.reports:
            parts.append(f"reports {self.reports}")
        parts.append(self.after)
        return "; ".join(parts)


def _command(client: str) -> list[str]:
    command = list(CLIENTS[client])
    if command[0] == "node":
        node = shutil.which("node")
        assert node, "node is not installed"
        command[0] = node
    return command


def run_matrix(transports: tuple[str, ...] = TRANSPORTS) -> dict[tuple[str, str, str], Any]:
    """Every (transport, fault, client) run; each client's output by key.

    Each client runs the runs of a transport at once in one process (its SDK loads once):
    over stdio each through an ``mcptape record`` of its own, over HTTP all through one gateway.
    """
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        gateway = None
        if "http" in transports:
            config = {"target": {"command": TARGET[0], "args": TARGET[1:]}}
            gateway = GatewayProcess(root / "g.db", config, "--no-auth", *_flags(), tmp=root)
        try:
            keys: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
            runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for client in CLIENTS:
                for transport in transports:
                    group = (client, transport)
                    keys[group], runs[group] = [], []
                    for n, fault in enumerate(FAULTS):
                        if transport == "stdio":
                            db = root / f"{n}-{client[:2]}.db"
                            target = ["stdio", *MCPTAPE, "record", "--db", str(db), *_flags(), "--", *TARGET]
                        else:
                            assert gateway is not None
                            target = ["http", gateway.url("target")]
                        keys[group].append((transport, fault, client))
                        runs[group].append({"plan": plan(fault, transport), "target": target})
            procs = {
                group: subprocess.Popen(
                    [*_command(group[0]), json.dumps(runs[group])],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for group in runs
            }
            results: dict[tuple[str, str, str], Any] = {}
            for group, proc in procs.items():
                out, err = proc.communicate(timeout=300)
                if proc.returncode != 0 or not out.strip():
                    raise RuntimeError(f"{group[0]} failed ({proc.returncode}): {err[-2000:]}")
                results.update(zip(keys[group], json.loads(out.strip().splitlines()[-1]), strict=True))
            return results
        finally:
            if gateway is not None:
                gateway.stop()


# -- what a run says -------------------------------------------------------------------------

_PAYLOAD = re.compile(r":\s*[\[{].*$")  # an SDK message ending with the JSON it could not use
# What the TypeScript SDK says about its reconnection attempts as they go: whether it got as
# far as a plain GET (refused with 409 while the session's GET stream is open) before the run
# ended, and how many attempts it made, depends on timing (CI saw both): left out.
_ATTEMPTS = re.compile(
    r"^(Maximum reconnection attempts|Failed to reconnect SSE stream|"
    r"Streamable HTTP error: Failed to open SSE stream: Conflict)"
)


def _message(text: str) -> str:
    return _PAYLOAD.sub("", text).strip()


def _ended(call: dict[str, Any], timeout: int) -> str:
    if call["outcome"] == "error":
        code = f"{call['code']} " if call.get("code") is not None else ""
        timed_out = call["ms"] >= timeout
        when = "after its timeout" if timed_out else "before its timeout"
        return f"fails {when} ({code}{_message(call['message'])!r})"
    if call["outcome"] == "tool error":
        return "ends with a tool error"
    return "succeeds"


def behaviour(fault: str, transport: str, out: dict[str, Any]) -> Behaviour:
    """The facts of one run: how the faulted call ended, what the SDK reported, whether the next call worked."""
    calls = out["calls"]
    index = 1
    if len(calls) <= index:
        ended = out.get("ended_by", "the session ended")
        return Behaviour(f"never made: {_message(ended)!r}", "", "")
    call = calls[index]
    timeout = timeout_ms(fault, transport)
    text = _ended(call, timeout)
    if fault.startswith("delay") and call["outcome"] == "result":
        text += f", {DELAY_MS / 1000:g} s late" if call["ms"] >= DELAY_MS else ", not late"
    if fault == "reorder":
        progress = [e.removeprefix("progress ") for e in call["events"] if e.startswith("progress")]
        text += f"; progress seen in order {', '.join(progress) or 'none'} (sent 2, 1, result, 3)"
    reports = sorted({_message(e) for e in out["errors"] if not _ATTEMPTS.match(e)})
    after = calls[index + 1] if len(calls) > index + 1 else None
    if after is None:
        next_call = "the session ends"
    elif after["outcome"] == "result":
        next_call = "the next call succeeds"
    else:
        next_call = f"the next call {_ended(after, timeout)}"
    return Behaviour(text, "; ".join(repr(r) for r in reports), next_call)


def table(results: dict[tuple[str, str, str], Any], transport: str) -> list[str]:
    """The Markdown table of one transport: a row per fault, a column per client."""
    clients = list(CLIENTS)
    lines = [f"| fault | {' | '.join(clients)} |", "|---|" + "---|" * len(clients)]
    for fault in FAULTS:
        cells = [
            behaviour(fault, transport, results[(transport, fault, c)]).cell().replace("|", "\\|")
            for c in clients
        ]
        lines.append(f"| `{fault}` | {' | '.join(cells)} |")
    return lines


# -- the document -----------------------------------------------------------------------------

SECTIONS: Final = {"stdio": "Over stdio (`mcptape record`)", "http": "Over streamable HTTP (`mcptape proxy`)"}

INTRO: Final = """\
# What MCP clients do under injected faults

<!-- Written by scripts/fault_table from real runs; do not edit the tables by hand:
     run scripts/fault_table again (tests/test_faults_clients.py checks them). -->

`mcptape record` and `mcptape proxy` inject faults on purpose (`--fault`, `--faults`; see
the README). These tables say what two reference clients do when they meet each one:
{clients}. Each run is one client session through mcptape to a small stdio server
(tests/servers/fault_target.py): a first tool call, the faulted call, and one more call to
see whether the session survived. Every call has a request timeout of {timeout:g} s ({cut:g} s
over stdio under `cut`: the TypeScript SDK notices a closed pipe only when the process
behind it exits, and mcptape exits once it has written the recording).

Each fault touches the answer to the faulted `tools/call` (the rule
`tools/call:TOOL=ACTION`), except `reorder`, which touches the `notifications/progress`
of a call that reports progress three times: mcptape sends progress 2, then 1, then
the result, then 3. `timeout` holds the request and never answers it (the server never
sees it), so what fires is the client's own timeout. `cut` closes mcptape's stdout over
stdio (the session ends); over streamable HTTP it ends the SSE stream the answer would
have taken (the session goes on, and a client may resume the stream with
`Last-Event-ID`).

A cell says how the faulted call ended (with the error the SDK raised), what else the SDK
reported (TypeScript: through `onerror`; Python: its log at WARNING and above), and how
the next call went.

Two of the TypeScript SDK's reports need a word. It handles a notification a tick after
it reads it, but a response at once: a progress notification that arrives with or after
its result finds its handler gone ("unknown token"), whoever reordered it. Over
streamable HTTP it takes a POST stream that ends without a *result* (an error answer, a
request it cancelled after its timeout, a cut) for a lost stream: it resumes it with a
GET carrying `Last-Event-ID`, and when that resumed stream ends, opens a plain GET, which
mcptape's gateway refuses (409) while the session's GET stream is open ("Failed to open
SSE stream: Conflict"). Whether it gets that far before the run ends, and how many
attempts it makes, depends on timing, so the table leaves those lines out.
"""


def _versions() -> str:
    import importlib.metadata

    package = ROOT / "tests" / "npm" / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    ts = json.loads(package.read_text())["version"]
    return f"the TypeScript SDK (`@modelcontextprotocol/sdk` {ts}) and the Python SDK (`mcp` {importlib.metadata.version('mcp')})"


def document(results: dict[tuple[str, str, str], Any]) -> str:
    """docs/faults.md: the introduction and a table per transport."""
    parts = [INTRO.format(clients=_versions(), timeout=TIMEOUT_MS / 1000, cut=CUT_STDIO_TIMEOUT_MS / 1000)]
    for transport, title in SECTIONS.items():
        if any(key[0] == transport for key in results):
            parts.append(f"## {title}\n\n" + "\n".join(table(results, transport)) + "\n")
    return "\n".join(parts)


_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def documented(text: str) -> dict[tuple[str, str, str], str]:
    """The cells of docs/faults.md by (transport, fault, client)."""
    titles = {f"## {title}": transport for transport, title in SECTIONS.items()}
    clients = list(CLIENTS)
    cells: dict[tuple[str, str, str], str] = {}
    transport = None
    for line in text.splitlines():
        if line.startswith("## "):
            transport = titles.get(line.strip())
        elif transport is not None and line.startswith("| `"):
            fault, *row = (cell.strip() for cell in _CELL_SPLIT.split(line.strip())[1:-1])
            for client, cell in zip(clients, row, strict=False):
                cells[(transport, fault.strip("`"), client)] = cell.replace("\\|", "|")
    return cells


def differences(text: str, results: dict[tuple[str, str, str], Any]) -> list[str]:
    """Where fresh runs disagree with the document, one line each (none: it tells the truth)."""
    doc = documented(text)
    found = []
    for key, out in results.items():
        got = behaviour(key[1], key[0], out).cell()
        said = doc.get(key)
        if said != got:
            found.append(f"{key[0]} {key[1]} {key[2]}: the doc says {said!r}; the run gave {got!r}")
    return found
