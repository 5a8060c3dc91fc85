"""tiny_mcp that outlives its stdin (like a server with timers) and cleans up slowly on SIGTERM.

``python -m tests.servers.lingering_mcp REPORT``: answers as tiny_mcp until stdin
closes, then waits; on SIGTERM it takes 0.3 s to "clean up", writes REPORT (JSON:
seconds from stdin EOF to SIGTERM) and exits 0. With ``--stubborn`` after REPORT it
says "stdin closed" on stderr at EOF and ignores SIGTERM: only SIGKILL ends it.
"""

from __future__ import annotations

import json
import signal
import sys
import time

from tests.servers.tiny_mcp import answer


def main() -> None:
    report = sys.argv[1]
    eof_at: list[float] = []

    def on_term(signum: int, frame: object) -> None:
        termed = time.monotonic()
        time.sleep(0.3)
        with open(report, "w") as file:
            json.dump({"eof_to_sigterm_s": termed - eof_at[0] if eof_at else None}, file)
        sys.exit(0)

    stubborn = "--stubborn" in sys.argv[2:]
    signal.signal(signal.SIGTERM, signal.SIG_IGN if stubborn else on_term)
    for line in sys.stdin:
        if line.strip():
            reply = answer(json.loads(line))
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()
    eof_at.append(time.monotonic())
    if stubborn:
        sys.stderr.write("stdin closed\n")
        sys.stderr.flush()
    time.sleep(30)


if __name__ == "__main__":
    main()
