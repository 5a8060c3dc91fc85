"""The official conformance suite's client scenarios, played by `mcptape call`.

The suite (``@modelcontextprotocol/conformance client --command CMD``) starts a scenario
server and runs ``CMD URL`` with ``MCP_CONFORMANCE_SCENARIO`` set; this dispatcher turns
each scenario into one `mcptape call` run and exits with its status::

    conformance client --command "python tests/conformance/call_client.py" --scenario tools_call

Scenarios that need the browser-less OAuth flow wired into a session (the auth/* ones)
are in expected_failures.yaml with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPTS: dict[str, list[dict[str, object]]] = {
    "initialize": [{"method": "server/info"}],
    "tools_call": [
        {"method": "tools/list"},
        {"method": "tools/call", "toolName": "add_numbers", "toolArg": {"a": "5", "b": "3"}},
    ],
    "elicitation-sep1034-client-defaults": [
        {"method": "tools/list"},
        {"method": "tools/call", "toolName": "test_client_elicitation_defaults"},
    ],
    "sse-retry": [{"method": "tools/list"}, {"method": "tools/call", "toolName": "test_reconnection"}],
}
FLAGS: dict[str, list[str]] = {
    # SEP-1034: the client fills omitted fields with the schema's defaults: what "auto" does.
    "elicitation-sep1034-client-defaults": ["--handle-elicitation", "auto"],
}


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    script = SCRIPTS.get(scenario)
    if script is None:
        print(f"call_client: no mcptape call script for scenario {scenario!r}", file=sys.stderr)
        return 1
    argv = [sys.executable, "-m", "mcptape", "call", "--no-record", "--script", "-", "--url", url]
    argv += FLAGS.get(scenario, [])
    return subprocess.run(
        [*argv, "--protocol-version", "2025-11-25"], input=json.dumps(script), text=True
    ).returncode


if __name__ == "__main__":
    sys.exit(main())
