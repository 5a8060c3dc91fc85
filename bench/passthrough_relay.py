"""The floor for any stdio relay: copy bytes both ways on two threads, no parsing, no recording.

bench_relay.py runs it as a second baseline, so the cost of the extra process hop
(which any man-in-the-middle pays) is separated from mcptape's own work.

    python bench/passthrough_relay.py SERVER_COMMAND...
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading


def main() -> None:
    proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    to_server, from_server = proc.stdin.fileno(), proc.stdout.fileno()

    def copy(src: int, dst: int) -> None:
        while chunk := os.read(src, 1 << 18):
            view = memoryview(chunk)
            while view:
                view = view[os.write(dst, view) :]

    up = threading.Thread(target=copy, args=(0, to_server))
    down = threading.Thread(target=copy, args=(from_server, 1))
    up.start()
    down.start()
    up.join()
    proc.stdin.close()
    down.join()
    sys.exit(proc.wait())


if __name__ == "__main__":
    main()
