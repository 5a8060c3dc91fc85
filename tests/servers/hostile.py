"""A badly behaved stdio "server" for tests of what mcptape does when a peer misbehaves.

Modes (one per run):
  deaf          never reads stdin, ignores SIGTERM: only SIGKILL ends it
  grandchild    starts a child that keeps stdout open for 600 s, then echoes lines until stdin closes
  flood-stdout  writes frames to stdout as fast as it can, forever
  flood-stderr  writes BYTES of 10-byte lines to stderr, then echoes stdin lines to stdout
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


def _flood_stderr(total: int) -> None:
    err = sys.stderr.buffer
    block = b"".join(b"%09d\n" % i for i in range(10_000))
    for _ in range(max(1, total // len(block))):
        err.write(block)
    err.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--bytes", type=int, default=30 << 20)
    parser.add_argument("--code", type=int, default=5)
    parser.add_argument("--pidfile")
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
    if args.mode == "flood-stderr":
        flood = threading.Thread(target=_flood_stderr, args=(args.bytes,), daemon=True)
        flood.start()
    for line in sys.stdin.buffer:
        out.write(line)
        out.flush()
    if args.mode == "flood-stderr":
        flood.join()
    if args.mode == "exit-after-eof":
        os._exit(args.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
