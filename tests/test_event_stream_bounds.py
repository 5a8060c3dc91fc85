"""A client-facing SSE stream never drops what it was given silently: a slow client holds the
upstream back; a client that stops reading is cut with an error event; what waits for nobody
is bounded, notifications dropped first and the gap said; a resumption past what is kept is told."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcptape.proxy.http import eventstream
from mcptape.proxy.http.downstream import EventStream as DownstreamStream
from mcptape.proxy.http.eventstream import Backlog, EventStream
from mcptape.proxy.http.sse import SseParser


def run(scenario: Any) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), 30))


class SlowClient:
    """A response writer that takes ``rate`` bytes/s, keeping the events it got."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.parser = SseParser()
        self.events: list[Any] = []

    async def write(self, data: bytes) -> None:
        await asyncio.sleep(len(data) / self.rate)
        self.events.extend(self.parser.feed(data))

    def numbers(self) -> list[int]:
        return [int(e.id.rpartition("-")[2]) for e in self.events if e.event == "message"]


def test_a_slow_client_holds_the_producer_back_and_gets_every_event_in_order() -> None:
    async def scenario() -> tuple[list[int], int]:
        stream = EventStream("p1")
        client = SlowClient(rate=20e6)
        stream.attach()
        pump = asyncio.ensure_future(stream.pump(client.write))
        most = 0
        for i in range(3000):  # 9 MB: far more than is held before the producer waits
            stream.push(json.dumps({"n": i, "pad": "x" * 3000}).encode(), droppable=True)
            most = max(most, stream.waiting)
            wait = stream.room()
            if wait is not None:
                await wait
        stream.close()
        await pump
        return client.numbers(), most

    numbers, most = run(scenario)
    assert numbers == list(range(1, 3001))
    assert most <= eventstream.HOLD_BYTES + 4000  # the producer waited: memory stays bounded


def test_events_pushed_faster_than_read_are_never_evicted_while_a_client_reads() -> None:
    async def scenario() -> list[int]:
        stream = DownstreamStream("p1")  # as the gateway's links import it
        client = SlowClient(rate=50e6)
        stream.attached = True
        pump = asyncio.ensure_future(stream.pump(client.write))
        for i in range(5000):  # a producer that does not wait: more than KEEP_EVENTS pile up
            stream.push(b'{"n":%d}' % i)
        stream.close()
        await pump
        return client.numbers()

    assert run(scenario) == list(range(1, 5001))


def test_a_client_that_stops_reading_is_cut_and_the_cut_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eventstream, "STALL_S", 0.3)
    cuts: list[tuple[str, dict[str, Any]]] = []
    aborted: list[bool] = []

    async def scenario() -> None:
        stream = EventStream("p1", backlog=Backlog(lambda text, data: cuts.append((text, data))))
        stuck = asyncio.Event()

        async def never_reads(data: bytes) -> None:
            await stuck.wait()

        stream.attach(lambda: aborted.append(True))
        pump = asyncio.ensure_future(stream.pump(never_reads))
        wait = None
        while wait is None:
            stream.push(b"x" * 100_000)
            wait = stream.room()
        await wait  # returns: the client was cut, the producer goes on
        assert not stream.attached and stream.room() is None
        pump.cancel()

    run(scenario)
    assert aborted == [True]
    [(text, data)] = cuts
    assert "took nothing for 0.3 s" in text and data["stream"] == "p1"


def test_what_waits_for_nobody_is_bounded_and_only_notifications_are_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(eventstream, "CUT_BYTES", 200_000)
    cuts: list[tuple[str, dict[str, Any]]] = []

    async def scenario() -> list[Any]:
        backlog = Backlog(lambda text, data: cuts.append((text, data)))
        stream = EventStream("g", backlog=backlog)  # a GET stream nobody opened
        for i in range(1, 201):
            answer = i % 50 == 0
            body = {"id": i, "result": {}} if answer else {"method": "notifications/message", "n": i}
            stream.push(json.dumps({**body, "pad": "x" * 2000}).encode(), droppable=not answer)
        assert backlog.waiting <= eventstream.CUT_BYTES
        stream.close()
        client = SlowClient(rate=1e9)
        await stream.pump(client.write)  # a client opens it at last
        return client.events

    events = run(scenario)
    kept = [json.loads(e.data) for e in events if e.event == "message"]
    errors = [json.loads(e.data) for e in events if e.event == "error"]
    assert [m["id"] for m in kept if "id" in m] == [50, 100, 150, 200]  # every answer
    assert kept[-2]["n"] == 199  # the newest notifications stay: the oldest go first
    assert errors and all("were dropped" in e["error"] for e in errors)
    first, last = errors[0]["first"], errors[-1]["last"]
    assert first == "g-1" and int(last.rpartition("-")[2]) > 100
    numbers = [int(e.id.rpartition("-")[2]) for e in events]
    assert numbers == sorted(numbers)  # in order, and every gap has its error event in its place
    assert cuts and all("dropped" in text for text, _ in cuts)


def test_a_resumption_from_events_no_longer_kept_is_told_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eventstream, "KEEP_EVENTS", 10)

    async def scenario() -> list[Any]:
        stream = EventStream("p1")
        for i in range(50):
            stream.push(b'{"n":%d}' % i)
        stream.close()
        first = SlowClient(rate=1e9)
        await stream.pump(first.write)  # everything, once
        again = SlowClient(rate=1e9)
        await stream.pump(again.write, 5)  # a client that got only 5 of them
        return again.events

    events = run(scenario)
    assert events[0].event == "error" and b"6 to 40" in events[0].data
    assert [int(e.id.rpartition("-")[2]) for e in events[1:]] == list(range(41, 51))
