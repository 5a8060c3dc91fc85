"""The pure parts of OTLP and HAR export: facts read from messages, attributes, HAR grouping."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from click.testing import CliRunner

from mcptape.store.har import entries, har_entry
from mcptape.telemetry.conventions import Operation, SessionFacts, network_attributes, role_of, span_name
from mcptape.telemetry.facts import id_attribute, reply_facts, request_facts, slim
from mcptape.telemetry.pairing import Pairing
from mcptape.telemetry.pipeline import endpoints
from mcptape.wire.frame import KEEP_PARSED_BYTES, Frame


def test_a_large_tool_call_is_read_without_building_it() -> None:
    big = "x" * (KEEP_PARSED_BYTES + 10)
    request = json.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"arguments": {"blob": big}, "name": "upload", "_meta": {"traceparent": "00-a-b-01"}}}
    ).encode()  # fmt: skip
    msg = slim(request)
    assert msg is not None and "arguments" not in msg["params"]
    facts = request_facts(msg)
    assert (facts.tool, facts.traceparent) == ("upload", "00-a-b-01")
    answer = json.dumps({"jsonrpc": "2.0", "id": 9, "result": {"content": [{"text": big}], "isError": True}})
    assert reply_facts(slim(answer.encode()), "tools/call").error_type == "tool_error"


def test_a_large_request_is_paired_and_named_like_a_small_one() -> None:
    session = SessionFacts("record", "stdio->stdio")
    pairing = Pairing(session)
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "upload", "arguments": {"b": "y" * (KEEP_PARSED_BYTES + 1)}}})  # fmt: skip
    frame = Frame(big.encode(), "c2s", ts=1.0)
    assert pairing.frame(frame, frame.kind, "c2s", frame.method, frame.rpc_id, 1.0, "client") == []
    answer = Frame(b'{"jsonrpc":"2.0","id":1.0,"error":{"code":-32001,"message":"too big"}}', "s2c", ts=1.5)
    [op] = pairing.frame(answer, answer.kind, "s2c", None, answer.rpc_id, 1.5, "server")
    assert (span_name(op), op.error_type, op.error_message, op.end - op.start) == (
        "tools/call upload",
        "-32001",
        "too big",
        0.5,
    )


def test_a_frame_kept_without_its_bytes_still_makes_its_span() -> None:
    pairing = Pairing(SessionFacts("record", "stdio->stdio"))
    assert pairing.frame(None, "request", "c2s", "tools/call", '"a"', 1.0, "client") == []
    [op] = pairing.frame(None, "response", "s2c", None, '"a"', 2.0, "server")
    assert (op.method, op.tool, op.error_type, op.rpc_id) == ("tools/call", None, None, '"a"')


def test_a_cancelled_request_ends_at_its_cancellation() -> None:
    pairing = Pairing(SessionFacts("proxy", "http->stdio"))
    req = Frame(b'{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"slow"}}', "c2s")
    pairing.frame(req, req.kind, "c2s", req.method, req.rpc_id, 1.0, "client")
    cancel = Frame(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}}', "c2s")
    cancelled, note = pairing.frame(cancel, cancel.kind, "c2s", cancel.method, None, 3.0, "client")
    assert (cancelled.error_type, cancelled.end, note.method) == ("cancelled", 3.0, "notifications/cancelled")


@pytest.mark.parametrize(
    ("rpc_id", "attribute"), [("10", "10"), ('"request-7"', "request-7"), ("null", None), ("1.0", "1.0")]
)
def test_the_request_id_attribute_is_the_ids_string_form(rpc_id: str, attribute: str | None) -> None:
    assert id_attribute(rpc_id) == attribute


def test_an_http_upstream_is_tcp_with_its_address_and_stdio_is_a_pipe() -> None:
    http = SessionFacts("record", "stdio->http", "https://mcp.example.com/mcp")
    assert network_attributes(http, "client", "c2s") == {
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "mcp.example.com",
        "server.port": 443,
    }
    # a server request travels to the client over our stdio
    assert network_attributes(http, "client", "s2c") == {"network.transport": "pipe"}
    assert network_attributes(SessionFacts("serve", "stdio->tape"), "server", "c2s") == {
        "network.transport": "pipe"
    }
    assert network_attributes(SessionFacts("replay", "tape->stdio"), "client", "c2s") == {
        "network.transport": "pipe"
    }


def test_the_injector_answering_a_server_request_makes_mcptape_its_server() -> None:
    assert role_of("record", "s2c", "proxy") == "server"
    assert role_of("record", "s2c", "client") == "client"
    assert role_of("record", "c2s", "proxy") == "client"  # mcptape's error for a request it forwarded


def test_a_span_name_is_method_and_target() -> None:
    assert span_name(Operation("prompts/get", "c2s", 0, 0, prompt="greet")) == "prompts/get greet"
    assert span_name(Operation("resources/read", "c2s", 0, 0, uri="file:///a")) == "resources/read"


@pytest.mark.parametrize(
    ("url", "traces"),
    [
        ("http://localhost:4318", "http://localhost:4318/v1/traces"),
        ("http://localhost:4318/", "http://localhost:4318/v1/traces"),
        ("http://jaeger:4318/v1/traces", "http://jaeger:4318/v1/traces"),
    ],
)
def test_the_receiver_url_may_be_its_base_or_its_traces_endpoint(url: str, traces: str) -> None:
    assert endpoints(url) == (traces, traces.replace("/v1/traces", "/v1/metrics"))


def _row(seq: int, direction: str, text: str, **meta: Any) -> dict[str, Any]:
    frame = Frame(text.encode(), direction)  # type: ignore[arg-type]
    return {
        "seq": seq, "ts": float(seq), "direction": direction, "origin": "client", "kind": frame.kind,
        "method": frame.method, "rpc_id": frame.rpc_id, "text": text, "meta": None,
        "http_method": meta.get("http_method"), "path": meta.get("path", "/mcp"), "stream": meta.get("stream"),
        "status": meta.get("status"), "event_id": meta.get("event_id"), "headers": json.dumps(meta.get("headers", {})),
    }  # fmt: skip


def test_har_puts_progress_and_the_answer_on_their_post_and_get_stream_frames_on_a_get() -> None:
    post = {"http_method": "POST", "stream": "post"}
    sse = {"stream": "post", "status": 200, "headers": {"content-type": "text/event-stream"}}
    rows = [
        _row(1, "c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}', **post),
        _row(2, "c2s", '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', **post),
        _row(3, "s2c", '{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}', **sse, event_id="p2-1"),
        _row(4, "s2c", '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}', **sse, event_id="p1-1"),
        _row(5, "s2c", '{"jsonrpc":"2.0","method":"notifications/message","params":{}}', stream="get", http_method="GET", status=200, event_id="g-1"),
        _row(6, "s2c", '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', **sse, event_id="p1-2"),
        _row(7, "c2s", '{"jsonrpc":"2.0","method":"notifications/initialized"}', **post),
    ]  # fmt: skip
    found = entries(rows)  # type: ignore[arg-type]
    assert [e.seqs for e in found] == [[1, 4, 6], [2, 3], [5], [7]]
    call = har_entry(found[0], "http://localhost")
    assert call["response"]["content"]["mimeType"] == "text/event-stream"
    assert call["response"]["content"]["text"].startswith("id: p1-1\nevent: message\ndata: ")
    assert call["time"] == 5000.0
    assert har_entry(found[2], "http://localhost")["request"]["method"] == "GET"
    assert har_entry(found[3], "http://localhost")["response"]["status"] == 202


def test_without_the_otel_extra_otlp_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcptape.cli.main import cli

    # as if mcptape[otel] were not installed: importing opentelemetry-proto fails
    monkeypatch.setitem(sys.modules, "opentelemetry.proto", None)
    result = CliRunner().invoke(cli, ["export", "last", "--otlp", "http://localhost:4318"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "pip install 'mcptape[otel]'" in result.output and "Traceback" not in result.output


def test_otlp_refuses_what_is_not_a_receivers_url() -> None:
    from mcptape.cli.main import cli

    result = CliRunner().invoke(cli, ["export", "last", "--otlp", "localhost:4318"])
    assert result.exit_code == 2 and "http(s)://HOST:PORT" in result.output


def test_call_says_a_missing_extra_in_one_line_with_its_usage_status(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcptape.cli.main import cli

    monkeypatch.setitem(sys.modules, "opentelemetry.proto", None)
    result = CliRunner().invoke(cli, ["call", "-m", "ping", "--otlp", "http://localhost:4318", "--", "true"])
    assert (result.exit_code, result.output.count("\n")) == (1, 1)
    assert "mcptape[otel]" in result.output
