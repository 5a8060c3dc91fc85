"""A cut over streamable HTTP (in-process): the stream the frame would take ends, the session goes on."""

from __future__ import annotations

import asyncio
from typing import Any

from mcptape.proxy.http.downstream import HttpSessionLink
from mcptape.wire.frame import Frame
from tests.helpers.faults import call, notification, result


def run(scenario: Any) -> None:
    async def main() -> None:
        link = HttpSessionLink("s1")
        delivered: list[Frame] = []
        link.start(lambda frame: delivered.append(frame), lambda why: None, lambda *a: None)
        await scenario(link, delivered)

    asyncio.run(main())


def test_cutting_a_request_ends_its_post_stream_and_a_late_answer_stays_on_it() -> None:
    async def scenario(link: HttpSessionLink, delivered: list[Frame]) -> None:
        request = Frame(call(1, "echo"), "c2s")
        stream = await link.post(request)
        assert stream is not None and not stream.closed
        assert link.cut(request) is False  # the session goes on
        assert stream.closed
        # An answer that comes all the same goes on the cut stream (Last-Event-ID), not the GET stream.
        link.send(Frame(result(1, {}), "s2c"))
        assert [event.data for event in stream.events] and not link.get_stream.events
        assert link.in_flight() == set()

    run(scenario)


def test_cutting_a_server_frame_ends_the_stream_it_would_go_on_without_it() -> None:
    async def scenario(link: HttpSessionLink, delivered: list[Frame]) -> None:
        stream = await link.post(Frame(call(1, "echo"), "c2s"))
        assert stream is not None
        link.cut(Frame(result(1, {}), "s2c"))
        assert stream.closed and list(stream.events) == []

    run(scenario)


def test_cutting_a_frame_for_the_get_stream_ends_the_response_not_the_stream() -> None:
    async def scenario(link: HttpSessionLink, delivered: list[Frame]) -> None:
        written: list[bytes] = []

        async def write(data: bytes) -> None:
            written.append(data)

        pump = asyncio.ensure_future(link.get_stream.pump(write))
        await asyncio.sleep(0)
        link.cut(Frame(notification("notifications/tools/list_changed"), "s2c"))
        assert await asyncio.wait_for(pump, 2) is False  # that response ended
        assert not link.get_stream.closed  # a new GET is served from the same stream
        link.send(Frame(notification("notifications/tools/list_changed"), "s2c"))
        again = asyncio.ensure_future(link.get_stream.pump(write))
        await asyncio.sleep(0.05)
        assert written and b"list_changed" in written[-1]
        link.get_stream.close()
        await asyncio.wait_for(again, 2)

    run(scenario)


def test_with_faults_the_gateway_relays_an_http_upstream_instead_of_passing_it_through(tmp_path: Any) -> None:
    from mcptape.config.registry import UpstreamSpec
    from mcptape.gateway.manager import GatewayConfig, RegistryUpstreams
    from mcptape.rules.faults import from_options

    registry = {"remote": UpstreamSpec("remote", "http", url="http://127.0.0.1:9/mcp")}
    plain = RegistryUpstreams(GatewayConfig(registry), store=None)  # type: ignore[arg-type]
    faulted = RegistryUpstreams(
        GatewayConfig(registry, faults=from_options(["tools/call=drop"], None)),
        store=None,  # type: ignore[arg-type]
    )
    assert plain.passes_through("remote") is not None
    assert faulted.passes_through("remote") is None  # the faults addon needs a relay
    assert faulted.plan(registry["remote"], "http->http").faults is not None
