"""Replay and serve benchmark: a fast MCP server driven directly vs re-driven by `replay`, and `serve`'s rate.

1. The same N exchanges (initialize, then N-1 ``tools/call``, each waiting for its
   response) are driven straight into a fresh server process, and replayed from a
   recording of that drive by mcptape's tape player through the relay (in this
   process, so interpreter start-up is left out of both; recording off, then on).
   Prints both times and the ratio (target: replay <= 1.5x direct).
2. `mcptape serve --file` answering the recording's requests, sequentially, vs the
   server answering them directly: requests/s and the ratio.

These machines are noisy: compare ratios from one run, not absolute times.

``--server everything`` runs the same against the reference server
(@modelcontextprotocol/server-everything over stdio, its ``echo`` tool) instead of
the fast Python server: a server that takes its time per call, as real ones do, where
the fast one shows the most of mcptape's own cost.

    .venv/bin/python bench/bench_replay.py [--exchanges 1000] [--rounds 3] [--server fast|everything]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_gateway import ENTRY  # noqa: E402

FAST = [sys.executable, str(ROOT / "tests" / "servers" / "fast_mcp.py")]
EVERYTHING = ["node", str(ENTRY), "stdio"]  # the reference server, as bench_gateway starts it
SERVERS = {"fast": FAST, "everything": EVERYTHING}
SERVER = FAST  # the server this run measures (--server)
MCPTAPE = [sys.executable, "-m", "mcptape"]

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def requests(n: int, server: list[str] = FAST) -> list[bytes]:
    call = (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"i":%d,"text":"hello"}}}'
        if server is FAST
        else b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello %d"}}}'
    )
    return [INIT, INITIALIZED, *(call % (i, i) for i in range(1, n))]


def read_answer(out: Any) -> list[bytes]:
    """The server's lines up to its next response (a notification may come first)."""
    lines = []
    while True:
        line = out.readline()
        if not line:
            raise SystemExit("the server ended before answering")
        lines.append(line.rstrip(b"\n"))
        if b'"method"' not in line:
            return lines


def drive(argv: list[str], frames: list[bytes]) -> tuple[float, list[tuple[str, bytes]]]:
    """Start ``argv``, send each frame (waiting for a request's response), stop; seconds and the transcript."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    transcript = []
    for frame in frames:
        proc.stdin.write(frame + b"\n")
        proc.stdin.flush()
        transcript.append(("c2s", frame))
        if b'"id"' in frame:
            transcript.extend(("s2c", line) for line in read_answer(proc.stdout))
    proc.stdin.close()
    proc.wait()
    return time.perf_counter() - t0, transcript


def floor_replay(argv: list[str], transcript: list[tuple[str, bytes]]) -> float:
    """The least any replayer does: send each recorded client frame, read each response, parse
    it and compare it with the recorded one. No relay, no recording, no normalisation;
    a floor measured in the same run, like the direct drive."""
    import orjson

    recorded = {
        orjson.loads(data)["id"]: orjson.loads(data)
        for direction, data in transcript
        if direction == "s2c" and b'"method"' not in data
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    differ = 0
    for direction, frame in transcript:
        if direction != "c2s":
            continue
        proc.stdin.write(frame + b"\n")
        proc.stdin.flush()
        if b'"id"' in frame:
            answer = orjson.loads(read_answer(proc.stdout)[-1])
            differ += answer != recorded[answer["id"]]
    proc.stdin.close()
    proc.wait()
    elapsed = time.perf_counter() - t0
    assert differ == 0, f"{differ} responses differ"
    return elapsed


def write_recording(path: Path, transcript: list[tuple[str, bytes]]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for i, (direction, data) in enumerate(transcript):
            out.write(json.dumps({"dir": direction, "t": i * 1e-4, "frame": data.decode()}) + "\n")


def replay_once(path: Path, db: str | None) -> tuple[float, int]:
    from mcptape.replay.run import ReplayPlan, replay_tape
    from mcptape.replay.tape import read_jsonl

    tape = read_jsonl(path)
    plan = ReplayPlan(SERVER, None, None, "bench", db, record=db is not None, grace=0.5, progress=False)
    t0 = time.perf_counter()
    replayed = asyncio.run(replay_tape(tape, plan))
    elapsed = time.perf_counter() - t0
    assert not replayed.result.error and not replayed.result.failed, replayed.result
    return elapsed, len(replayed.result.exchanges)


def serve_rate(path: Path, frames: list[bytes]) -> float:
    """Requests/s `mcptape serve` answers, sequentially, after its start-up."""
    proc = subprocess.Popen(
        [*MCPTAPE, "serve", "--file", str(path), "--no-record"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT + b"\n" + INITIALIZED + b"\n")
    proc.stdin.flush()
    read_answer(proc.stdout)
    calls = frames[2:]
    t0 = time.perf_counter()
    for frame in calls:
        proc.stdin.write(frame + b"\n")
        proc.stdin.flush()
        read_answer(proc.stdout)
    elapsed = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(30)
    return len(calls) / elapsed


def direct_rate(frames: list[bytes]) -> float:
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT + b"\n" + INITIALIZED + b"\n")
    proc.stdin.flush()
    read_answer(proc.stdout)
    calls = frames[2:]
    t0 = time.perf_counter()
    for frame in calls:
        proc.stdin.write(frame + b"\n")
        proc.stdin.flush()
        read_answer(proc.stdout)
    elapsed = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(30)
    return len(calls) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=sorted(SERVERS), default="fast")
    args = parser.parse_args()
    global SERVER
    SERVER = SERVERS[args.server]
    frames = requests(args.exchanges, SERVER)
    tiny = requests(2, SERVER)  # initialize and one call: what a run costs besides its exchanges
    with tempfile.TemporaryDirectory() as tmp:
        path, tiny_path = Path(tmp) / "fast.jsonl", Path(tmp) / "tiny.jsonl"
        _, transcript = drive(SERVER, frames)
        write_recording(path, transcript)
        _, tiny_transcript = drive(SERVER, tiny)
        write_recording(tiny_path, tiny_transcript)
        db = str(Path(tmp) / "rec.db")
        replay_once(path, None)  # warm up imports
        replay_once(path, db)  # create and migrate the database once
        runs: dict[str, list[float]] = {}
        small: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for name, run in (
                ("direct", lambda f, t, p: drive(SERVER, f)[0]),
                ("floor", lambda f, t, p: floor_replay(SERVER, t)),
                ("replay", lambda f, t, p: replay_once(p, None)[0]),
                ("recorded", lambda f, t, p: replay_once(p, db)[0]),
            ):
                runs.setdefault(name, []).append(run(frames, transcript, path))
                small.setdefault(name, []).append(run(tiny, tiny_transcript, tiny_path))
        med = {name: statistics.median(v) for name, v in runs.items()}
        d = med["direct"]
        print(
            f"{args.exchanges} exchanges, median of {args.rounds} rounds (server start-up included in each)"
        )
        print(f"  direct drive          {d * 1000:8.1f} ms")
        notes = {
            "floor": "floor replayer      ",
            "replay": "replay (no recording)",
            "recorded": "replay (recorded)    ",
        }
        for name, label in notes.items():
            extra = "   (send, read, parse, compare; nothing else)" if name == "floor" else ""
            extra = "   (target <= 1.5x)" if name == "replay" else extra
            print(f"  {label} {med[name] * 1000:8.1f} ms   ratio {med[name] / d:.2f}x{extra}")
        f = med["floor"]
        print(
            f"  replay over the floor: {med['replay'] / f:.2f}x without recording, {med['recorded'] / f:.2f}x recorded"
        )
        # Start-up dominates a short run and the machine's noise lands on it: split each
        # time into what any run costs (a 2-exchange run) and what each exchange adds,
        # from the fastest round of each (the least disturbed).
        print("  split (fastest rounds): fixed cost of a run, then cost per exchange")
        n = args.exchanges - 2
        for name in runs:
            fixed, whole = min(small[name]), min(runs[name])
            per = (whole - fixed) / n if n > 0 else 0.0
            print(f"    {name:9} {fixed * 1000:7.1f} ms + {per * 1e6:6.1f} us per exchange")
        served = statistics.median(serve_rate(path, frames) for _ in range(args.rounds))
        live = statistics.median(direct_rate(frames) for _ in range(args.rounds))
        print(
            f"serve: {served:,.0f} requests/s sequential; the server directly {live:,.0f}/s; ratio {served / live:.2f}x"
        )


if __name__ == "__main__":
    main()
