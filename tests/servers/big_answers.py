"""A raw stdio MCP server for tests: every tools/call answers with a text of --size bytes.

Not on the `mcp` SDK: it answers whatever it is asked as fast as it can, so tests can
measure what an HTTP front end keeps of large answers.
"""

from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 20)
    args = parser.parse_args()
    out = sys.stdout
    for line in sys.stdin:
        message = json.loads(line)
        rid, method = message.get("id"), message.get("method")
        if rid is None:
            continue
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "big-answers", "version": "1"},
            }
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "x" * args.size}]}
        else:
            result = {}
        out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
