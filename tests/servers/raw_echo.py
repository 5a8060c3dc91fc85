"""A raw stdio "server" for tests: writes back exactly the bytes it receives, line by line.

Not an MCP server: it lets tests check that what the client sent reached the
server byte for byte, and that what the server wrote reached the client unchanged.

Options:
  --stderr N            write N numbered lines to stderr at start
  --crash-on TEXT       on a line containing TEXT, write "crashing" to stderr and exit
  --exit-code C         the exit status for --crash-on (default 3)
  --ignore-stdin-eof    keep running after stdin closes (tests SIGTERM/SIGKILL escalation)
  --ignore-sigterm      ignore SIGTERM (tests the SIGKILL after the grace period)
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stderr", type=int, default=0)
    parser.add_argument("--crash-on")
    parser.add_argument("--exit-code", type=int, default=3)
    parser.add_argument("--ignore-stdin-eof", action="store_true")
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for i in range(args.stderr):
        sys.stderr.write(f"log line {i}\n")
    sys.stderr.flush()
    out = sys.stdout.buffer
    crash = args.crash_on.encode() if args.crash_on else None
    for line in sys.stdin.buffer:
        if crash is not None and crash in line:
            sys.stderr.write("crashing\n")
            sys.stderr.flush()
            os._exit(args.exit_code)
        out.write(line)
        out.flush()
    if args.ignore_stdin_eof:
        while True:
            time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
