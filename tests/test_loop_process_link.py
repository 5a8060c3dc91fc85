"""LoopProcessLink: a real spawned server whose pipes the event loop reads and writes.

The gateway runs stdio upstreams on it (the HTTP side lives on the loop too). These
tests drive it directly with real processes: order and bytes, back-pressure both ways,
a server that stops reading, one that dies, one whose grandchild keeps its stdout,
a frame of many megabytes, and the shutdown escalation.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mcptape.proxy.link import LinkClosed
from mcptape.proxy.links.looppipe import LoopProcessLink
from mcptape.proxy.links.stdio import QUEUE_LIMIT
from mcptape.wire.frame import Frame

pytestmark = pytest.mark.slow

ECHO = [sys.executable, "-m", "tests.servers.raw_echo"]


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), 30))


class Sink:
    """What a relay would be: collects delivered frames and the reason receiving ended."""

    def __init__(self, hold: Callable[[Frame], Awaitable[Any] | None] | None = None) -> None:
        self.frames: list[Frame] = []
        self.ended: list[str] = []
        self.done = asyncio.Event()
        self.arrived = asyncio.Event()
        self.hold = hold

    def deliver(self, frame: Frame) -> Awaitable[Any] | None:
        self.frames.append(frame)
        self.arrived.set()
        return self.hold(frame) if self.hold is not None else None

    def end(self, why: str) -> None:
        self.ended.append(why)
        self.done.set()

    def event(self, kind: str, text: str | None, data: object) -> None:
        pass

    async def wait_for(self, count: int) -> None:
        while len(self.frames) < count:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 10)


def start(argv: list[str], sink: Sink) -> LoopProcessLink:
    link = LoopProcessLink.spawn(argv, echo_stderr=False)
    link.start(sink.deliver, sink.end, sink.event)
    return link


def test_frames_cross_both_ways_byte_for_byte_in_order_and_no_thread_reads_the_pipe() -> None:
    odd = [b'{"jsonrpc":"2.0",  "id":1,"method":"a"}', b"not json at all", "caf\u00e9 \u2603".encode()]

    async def scenario() -> tuple[list[bytes], list[str], set[str]]:
        sink = Sink()
        link = start(ECHO, sink)
        for data in odd * 50:
            assert link.send(Frame(data, "c2s")) is None
        await sink.wait_for(len(odd) * 50)
        threads = {t.name for t in threading.enumerate()}
        end = await link.aclose(1.0)
        await asyncio.wait_for(sink.done.wait(), 5)
        assert end.reason == "exited" and end.exit_code == 0
        return [f.data for f in sink.frames], sink.ended, threads

    got, ended, threads = run(scenario)
    assert got == odd * 50
    assert ended == ["eof"]
    assert not any(name.endswith(("-reader", "-writer")) and "server" in name for name in threads)


def test_a_last_line_without_newline_is_delivered_without_one() -> None:
    script = 'import sys; sys.stdout.write(\'{"a":1}\\n{"b":2}\'); sys.stdout.flush()'

    async def scenario() -> list[tuple[bytes, object]]:
        sink = Sink()
        link = start([sys.executable, "-c", script], sink)
        await asyncio.wait_for(sink.done.wait(), 10)
        await link.aclose(0.5)
        return [(f.data, (f.meta or {}).get("eol")) for f in sink.frames]

    assert run(scenario) == [(b'{"a":1}', None), (b'{"b":2}', False)]


def test_the_pipe_is_not_read_while_the_relay_holds_a_frame_back() -> None:
    script = "import sys\nfor i in range(3): print(i, flush=True)\n"

    async def scenario() -> None:
        gate = asyncio.get_running_loop().create_future()
        sink = Sink(hold=lambda frame: gate if frame.data == b"0" else None)
        link = start([sys.executable, "-c", script], sink)
        await sink.wait_for(1)
        await asyncio.sleep(0.3)  # the server wrote everything meanwhile
        assert [f.data for f in sink.frames] == [b"0"]
        gate.set_result(None)
        await sink.wait_for(3)
        await asyncio.wait_for(sink.done.wait(), 5)
        assert [f.data for f in sink.frames] == [b"0", b"1", b"2"]
        assert sink.ended == ["eof"]
        await link.aclose(0.5)

    run(scenario)


def test_a_server_that_stops_reading_queues_without_blocking_the_loop_then_pushes_back() -> None:
    # Sleeps without reading its stdin, then exits: the pipe fills up.
    script = "import time; time.sleep(30)"

    async def scenario() -> None:
        sink = Sink()
        link = start([sys.executable, "-c", script], sink)
        frame = Frame(b"x" * (1 << 20), "c2s")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        tick = asyncio.ensure_future(ticker())
        pending = None
        sent = 0
        t0 = time.monotonic()
        while pending is None:
            pending = link.send(frame)
            sent += 1
            await asyncio.sleep(0)
        assert time.monotonic() - t0 < 5
        assert sent * len(frame.data) > QUEUE_LIMIT  # queued past the limit before pushing back
        assert link.pending_bytes() > QUEUE_LIMIT - (1 << 20)
        await asyncio.sleep(0.05)
        assert ticks > 5  # the loop kept running
        assert not asyncio.ensure_future(pending).done()
        tick.cancel()
        end = await link.aclose(0.2)
        assert end.stopped_by_us  # it had to be signalled
        await asyncio.sleep(0)
        assert link.pending_bytes() == 0  # the queue went with the pipe

    run(scenario)


def test_a_dead_server_makes_send_raise_and_receiving_end() -> None:
    async def scenario() -> None:
        sink = Sink()
        link = start([*ECHO, "--crash-on", "die", "--exit-code", "4"], sink)
        link.send(Frame(b"die", "c2s"))
        await asyncio.wait_for(sink.done.wait(), 10)
        with pytest.raises(LinkClosed):
            for _ in range(100):  # the first writes may still land in the pipe's buffer
                link.send(Frame(b"x" * 65536, "c2s"))
                await asyncio.sleep(0.01)
        end = await link.aclose(0.5)
        assert (end.reason, end.exit_code) == ("exited", 4)
        assert sink.ended == ["eof"]

    run(scenario)


def test_a_grandchild_holding_stdout_does_not_keep_the_link_open() -> None:
    # The server starts a sleeper that inherits its stdout, then exits at once.
    script = (
        "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']);"
        "print('{\"bye\":1}', flush=True)"
    )

    async def scenario() -> None:
        sink = Sink()
        link = start([sys.executable, "-c", script], sink)
        t0 = time.monotonic()
        await asyncio.wait_for(sink.done.wait(), 10)
        assert time.monotonic() - t0 < 5
        assert [f.data for f in sink.frames] == [b'{"bye":1}']
        assert sink.ended == ["exited"]
        end = await link.aclose(0.3)
        assert end.exit_code == 0

    run(scenario)


def test_a_frame_of_many_megabytes_arrives_whole_both_ways() -> None:
    big = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"' + b"z" * (12 << 20) + b'"}}'

    async def scenario() -> None:
        sink = Sink()
        link = start(ECHO, sink)
        pending = link.send(Frame(big, "c2s"))
        if pending is not None:
            await pending
        await sink.wait_for(1)
        assert sink.frames[0].data == big
        await link.aclose(1.0)

    run(scenario)


def test_stop_receiving_from_another_thread_ends_with_stopped() -> None:
    async def scenario() -> None:
        sink = Sink()
        link = start(ECHO, sink)
        link.send(Frame(b"one", "c2s"))
        await sink.wait_for(1)
        threading.Thread(target=link.stop_receiving).start()
        await asyncio.wait_for(sink.done.wait(), 5)
        assert sink.ended == ["stopped"]
        link.send(Frame(b"two", "c2s"))  # still accepted; nothing is delivered any more
        await asyncio.sleep(0.2)
        assert [f.data for f in sink.frames] == [b"one"]
        await link.aclose(0.5)

    run(scenario)


def test_a_send_from_another_thread_reaches_the_server_in_order() -> None:
    async def scenario() -> None:
        sink = Sink()
        link = start(ECHO, sink)
        sender = threading.Thread(target=lambda: [link.send(Frame(b"%d" % i, "c2s")) for i in range(200)])
        sender.start()
        await asyncio.get_running_loop().run_in_executor(None, sender.join)
        await sink.wait_for(200)
        assert [f.data for f in sink.frames] == [b"%d" % i for i in range(200)]
        await link.aclose(0.5)

    run(scenario)


def test_a_server_ignoring_stdin_eof_and_sigterm_is_killed_within_the_bound() -> None:
    async def scenario() -> None:
        sink = Sink()
        link = start([*ECHO, "--ignore-stdin-eof", "--ignore-sigterm"], sink)
        link.send(Frame(b"ready", "c2s"))
        await sink.wait_for(1)  # it runs and has set up its handlers
        t0 = time.monotonic()
        end = await link.aclose(0.2)
        assert time.monotonic() - t0 < 0.2 * 2 + 1.5 + 0.5
        assert end.stopped_by_us and end.exit_code is not None and end.exit_code < 0

    run(scenario)
