"""The official conformance suite's client scenarios, played by `mcptape call`.

The suite (``@modelcontextprotocol/conformance client --command CMD``) starts a scenario
server and runs ``CMD URL`` with ``MCP_CONFORMANCE_SCENARIO`` set; this dispatcher turns
each scenario into one `mcptape call` run and exits with its status::

    conformance client --command "python tests/conformance/call_client.py" --scenario tools_call

The auth/* scenarios' servers answer 401 until `call` has run the OAuth flow (on by
default); a scenario's context (``MCP_CONFORMANCE_CONTEXT``: pre-registered client
credentials) becomes flags. Scenarios `call` does not pass are in expected_failures.yaml
with the reason.
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
AUTH_SCRIPT: list[dict[str, object]] = [
    {"method": "tools/list"},
    {"method": "tools/call", "toolName": "test-tool"},
]
# The URL the scenarios expect as a Client ID Metadata Document client_id (auth/basic-cimd).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
FLAGS: dict[str, list[str]] = {
    # SEP-1034: the client fills omitted fields with the schema's defaults: what "auto" does.
    "elicitation-sep1034-client-defaults": ["--handle-elicitation", "auto"],
}


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    script = SCRIPTS.get(scenario) or (AUTH_SCRIPT if scenario.startswith("auth/") else None)
    if script is None:
        print(f"call_client: no mcptape call script for scenario {scenario!r}", file=sys.stderr)
        return 1
    argv = [sys.executable, "-m", "mcptape", "call", "--no-record", "--script", "-", "--url", url]
    argv += FLAGS.get(scenario, [])
    if scenario.startswith("auth/"):
        argv += ["--client-metadata-url", CLIENT_METADATA_URL]
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        if context.get("client_id"):
            argv += ["--client-id", context["client_id"]]
        if context.get("client_secret"):
            argv += ["--client-secret", context["client_secret"]]
    return subprocess.run(
        [*argv, "--protocol-version", "2025-11-25"], input=json.dumps(script), text=True
    ).returncode


if __name__ == "__main__":
    sys.exit(main())
