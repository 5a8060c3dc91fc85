"""`mcptape ui`: first paint of a 100,000-frame session's page, and scrolling it, in the real browser.

Writes a session of N frames (tools/call requests and results, a progress notification
in ten, stderr lines) and a 100-frame session (the baseline, measured in the same run)
into a fresh SQLite file, starts `mcptape ui`, and opens each session's page in Debian's
headless Chromium (Playwright, /usr/bin/chromium). First paint is the time from the
start of the navigation to the frame after the page drew its timeline and first rows
(``window.__mcptapePainted``): the page paints from the session's first frames and its
time bounds, then reads the rest in chunks; "all drawn" is when the last chunk is drawn
(``window.__mcptapeLoaded``). Both over several loads (median). Then the frame list is
scrolled through in 40 wheel steps and the longest gap between two animation frames is
the worst freeze a person would see. The machine's load average is printed with the
figures (these machines are shared: compare the two sessions of one run).

    .venv/bin/python bench/bench_viewer.py [--frames N] [--loads K]

Target (issue 21): first paint under 1 s for 100,000 frames on this machine; scrolling
without freezing (no gap near a second).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson

from mcptape.store import open_store
from mcptape.wire.frame import Frame

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
WATCH_FRAMES = """
window.__gaps = [];
let last = performance.now();
const tick = (now) => { window.__gaps.push(now - last); last = now; if (window.__watching) requestAnimationFrame(tick); };
window.__watching = true;
requestAnimationFrame(tick);
"""


def write_session(writer: object, name: str, frames: int, t0: float) -> str:
    session = writer.create_session(mode="record", name=name, started_at=t0)  # type: ignore[attr-defined]
    seq = 0
    t = t0
    call = 0
    while seq < frames:
        call += 1
        t += 0.002
        seq += 1
        ask = {
            "jsonrpc": "2.0",
            "id": call,
            "method": "tools/call",
            "params": {"name": f"tool{call % 7}", "arguments": {"n": call}},
        }
        writer.add_frame(session, seq, Frame(orjson.dumps(ask), "c2s", None, t))  # type: ignore[attr-defined]
        if call % 10 == 0 and seq < frames:
            seq += 1
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": call, "progress": 1},
            }
            writer.add_frame(session, seq, Frame(orjson.dumps(note), "s2c", None, t + 0.0005))  # type: ignore[attr-defined]
        if seq < frames:
            seq += 1
            answer = {
                "jsonrpc": "2.0",
                "id": call,
                "result": {"content": [{"type": "text", "text": "x" * (call % 200)}]},
            }
            writer.add_frame(session, seq, Frame(orjson.dumps(answer), "s2c", None, t + 0.001))  # type: ignore[attr-defined]
        if call % 500 == 0:
            writer.add_event(session, "stderr", f"processed {call} calls", ts=t)  # type: ignore[attr-defined]
    writer.update_session(session, status="closed", ended_at=t + 0.01)  # type: ignore[attr-defined]
    return session


def measure(page: object, base: str, session: str, loads: int) -> tuple[list[float], list[float], float]:
    paints, loaded = [], []
    for i in range(loads):
        page.goto(f"{base}/?load={i}#/s/{session}")  # type: ignore[attr-defined]
        page.wait_for_function("window.__mcptapeLoaded !== undefined", timeout=120_000)  # type: ignore[attr-defined]
        paints.append(page.evaluate("window.__mcptapePainted"))  # type: ignore[attr-defined]
        loaded.append(page.evaluate("window.__mcptapeLoaded"))  # type: ignore[attr-defined]
        marks = page.evaluate(  # type: ignore[attr-defined]
            "performance.getEntriesByType('mark').map(m => m.name + ' ' + Math.round(m.startTime)).join(', ')"
        )
        print(f"  {session[:8]} load {i}: painted {paints[-1]:.0f} ms, all drawn {loaded[-1]:.0f} ms ({marks})",
              file=sys.stderr)  # fmt: skip
    page.evaluate(WATCH_FRAMES)  # type: ignore[attr-defined]
    box = page.locator("[data-testid=frames]").bounding_box()  # type: ignore[attr-defined]
    page.mouse.move(box["x"] + 100, box["y"] + 100)  # type: ignore[attr-defined]
    height = page.evaluate("document.querySelector('[data-testid=frames]').scrollHeight")  # type: ignore[attr-defined]
    for _ in range(40):
        page.mouse.wheel(0, height / 40)  # type: ignore[attr-defined]
        page.wait_for_timeout(15)  # type: ignore[attr-defined]
    page.evaluate("window.__watching = false")  # type: ignore[attr-defined]
    worst = max(page.evaluate("window.__gaps"))  # type: ignore[attr-defined]
    bottom = page.evaluate("document.querySelector('[data-testid=frames]').scrollTop")  # type: ignore[attr-defined]
    if bottom < height * 0.5:
        raise SystemExit(f"the list did not scroll (scrollTop {bottom} of {height})")
    return paints, loaded, worst


def first_and_all(base: str, session: str) -> tuple[float, float, int]:
    """The timeline API's first answer, and all of the session's chunks read in turn: ms, ms, bytes."""

    def get(path: str) -> bytes:
        request = urllib.request.Request(base + path, headers={"X-Mcptape-Token": "bench-token"})
        with urllib.request.urlopen(request) as response:
            return bytes(response.read())

    started = time.perf_counter()
    body = get(f"/api/sessions/{session}/timeline")
    first = (time.perf_counter() - started) * 1000
    size, after = len(body), orjson.loads(body)["next"]
    while after is not None:
        body = get(f"/api/sessions/{session}/frames?after={after}&limit=25000")
        size, after = size + len(body), orjson.loads(body)["next"]
    return first, (time.perf_counter() - started) * 1000, size


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        store = open_store(str(db))
        writer = store.writer()
        t0 = time.time() - 3600
        small = write_session(writer, "small", 100, t0)
        big = write_session(writer, "big", args.frames, t0 + 10)
        writer.close()
        store.close()
        env = dict(os.environ, MCPTAPE_UI_TOKEN="bench-token", PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([sys.executable, "-m", "mcptape", "ui", "--port", "0", "--db", str(db)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            base = url.split("/#")[0]
            api = {}
            for name, session in (("100 frames", small), (f"{args.frames:,} frames", big)):
                api[name] = first_and_all(base, session)
            results = {}
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                # The bench reads its marks with evaluate(), which the page's CSP would refuse.
                context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
                page = context.new_page()
                page.goto(url)
                page.wait_for_selector("[data-testid=sessions]")
                for name, session in (("100 frames", small), (f"{args.frames:,} frames", big)):
                    results[name] = measure(page, base, session, args.loads)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    load_after = os.getloadavg()
    print(f"session page in headless Chromium, {args.loads} loads each; load average "
          f"{' '.join(f'{x:.1f}' for x in load_before)} before, {' '.join(f'{x:.1f}' for x in load_after)} after")  # fmt: skip
    print(f"{'':16} {'first API':>10} {'all API':>9} {'JSON':>8} {'paint med':>10} {'paint max':>10} "
          f"{'all drawn':>10} {'scroll: worst frame':>20}")  # fmt: skip
    for name, (paints, loaded, worst) in results.items():
        first_ms, all_ms, size = api[name]
        print(f"{name:16} {first_ms:8.0f}ms {all_ms:7.0f}ms {size / 1e6:6.2f}MB {statistics.median(paints):8.0f}ms "
              f"{max(paints):8.0f}ms {statistics.median(loaded):8.0f}ms {worst:18.0f}ms")  # fmt: skip
    names = list(results)
    ratio = statistics.median(results[names[1]][0]) / statistics.median(results[names[0]][0])
    paint = statistics.median(results[names[1]][0])
    print(f"first paint, {names[1]} vs {names[0]}: {ratio:.1f}x")
    print(f"target: first paint under 1000 ms: {'met' if paint < 1000 else 'NOT met'} ({paint:.0f} ms)")


if __name__ == "__main__":
    main()
