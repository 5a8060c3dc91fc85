"""A badly behaved stdio "server" for tests of what mcptape does when a peer misbehaves.

Modes (one per run):
  deaf          never reads stdin, ignores SIGTERM: only SIGKILL ends it
  grandchild    starts a child that keeps stdout open for 600 s, then echoes lines until stdin closes
  flood-stdout  writes frames to stdout as fast as it can, forever
  flood-stderr  writes BYTES of 10-byte lines to stderr while it echoes stdin lines to stdout;
                with --until-eof, writes them from before the first echo until stdin closes
                instead, and then the number of lines it wrote to the --count-file
  exit-after-eof  echoes lines; when stdin closes, exits with status CODE
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time

BLOCK_LINES = 10_000


def _flood_stderr(
    total: int | None, started: threading.Event, stop: threading.Event, written: list[int]
) -> None:
    """``total`` bytes of lines (None: until ``stop``); ``started`` once the first block is out."""
    err = sys.stderr.buffer
    block = b"".join(b"%09d\n" % i for i in range(BLOCK_LINES))
    blocks = max(1, total // len(block)) if total is not None else None
    while blocks is None or written[0] < blocks * BLOCK_LINES:
        err.write(block)
        err.flush()
        written[0] += BLOCK_LINES
        started.set()
        if stop.is_set():
            break


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--bytes", type=int, default=30 << 20)
    parser.add_argument("--code", type=int, default=5)
    parser.add_argument("--pidfile")
    parser.add_argument("--until-eof", action="store_true")
    parser.add_argument("--count-file")
    args = parser.parse_args()
    out = sys.stdout.buffer
    if args.mode == "deaf":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    if args.mode == "grandchild":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdout=sys.stdout)
        if args.pidfile:
            with open(args.pidfile, "w") as f:
                f.write(str(child.pid))
    if args.mode == "flood-stdout":
        line = (
            b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
            + b"x" * 200
            + b'"}}\n'
        )
        while True:
            out.write(line * 100)
            out.flush()
    started, stop, written = threading.Event(), threading.Event(), [0]
    if args.mode == "flood-stderr":
        total = None if args.until_eof else args.bytes
        flood = threading.Thread(target=_flood_stderr, args=(total, started, stop, written), daemon=True)
        flood.start()
        if args.until_eof:
            started.wait()  # the flood is under way before the first line is echoed
    for line in sys.stdin.buffer:
        out.write(line)
        out.flush()
    if args.mode == "flood-stderr":
        if args.until_eof:
            stop.set()
        flood.join()
        if args.count_file:
            with open(args.count_file, "w") as f:
                f.write(str(written[0]))
    if args.mode == "exit-after-eof":
        os._exit(args.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
