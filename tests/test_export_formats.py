"""`mcptape export --format otlp|har` and `export --otlp URL` on real recordings.

Recordings are made by real sessions (server-everything over stdio through `record`,
over streamable HTTP through `call`); the OTLP JSON lines are decoded back into the
protobuf messages of opentelemetry-proto, and the receiver is the one in
tests/helpers/otlp.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.helpers.http_servers import everything_http
from tests.helpers.otlp import OtlpReceiver, attributes
from tests.helpers.paths import MCPTAPE, everything_server_cmd

pytestmark = pytest.mark.slow

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"


def _lines(*messages: dict[str, object]) -> bytes:
    return b"".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in messages)


HELLO = [
    {"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": "t", "version": "1"}}},
    {"method": "notifications/initialized"},
]  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `record` session of server-everything over stdio: a traced tool call and an unknown tool."""
    cmd = everything_server_cmd()
    assert cmd is not None, "tests/npm is not installed"
    db = tmp_path_factory.mktemp("otlp") / "rec.db"
    script = _lines(
        *HELLO,
        {"id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"},
                                                     "_meta": {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}}},
        {"id": 3, "method": "prompts/get", "params": {"name": "no-such-prompt"}},
    )  # fmt: skip
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db), "--answer-wait", "5", "--", *cmd],
        input=script,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return db


def _export(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPTAPE, "export", "last", "--db", str(db), *args], capture_output=True, text=True, timeout=60
    )


def test_format_otlp_writes_otlp_json_lines_with_the_conventions_spans_and_metrics(recorded: Path) -> None:
    proc = _export(recorded, "--format", "otlp")
    assert proc.returncode == 0, proc.stderr
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    traces = [d for d in docs if "resourceSpans" in d]
    metrics = [d for d in docs if "resourceMetrics" in d]
    assert len(traces) == 1 and len(metrics) == 1
    # OTLP JSON: hex ids, integer enums; protobuf's own JSON would have base64 ids
    span_docs = traces[0]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    call_doc = next(s for s in span_docs if s["name"] == "tools/call echo")
    assert (call_doc["traceId"], call_doc["parentSpanId"], call_doc["kind"]) == (TRACE_ID, PARENT_ID, 3)
    for doc in traces:  # it decodes as the protobuf the OTLP receivers take
        doc = json.loads(json.dumps(doc))
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if s.get(key):
                            s[key] = __import__("base64").b64encode(bytes.fromhex(s[key])).decode()
        spans = ParseDict(doc, ExportTraceServiceRequest()).resource_spans[0].scope_spans[0].spans
    by_name = {s.name: s for s in spans}
    assert set(by_name) >= {
        "initialize",
        "notifications/initialized",
        "tools/call echo",
        "prompts/get no-such-prompt",
    }
    call = attributes(by_name["tools/call echo"].attributes)
    assert call["gen_ai.tool.name"] == "echo" and call["jsonrpc.request.id"] == "2"
    assert call["network.transport"] == "pipe" and call["mcp.protocol.version"] == "2025-06-18"
    prompt = by_name["prompts/get no-such-prompt"]
    assert attributes(prompt.attributes)["error.type"].startswith("-326")
    assert prompt.status.code == 2
    names = {
        m.name
        for m in ParseDict(metrics[0], ExportMetricsServiceRequest())
        .resource_metrics[0]
        .scope_metrics[0]
        .metrics
    }
    assert names == {"mcp.client.operation.duration", "mcp.client.session.duration"}


def test_export_otlp_url_posts_the_same_spans_to_a_receiver(recorded: Path) -> None:
    receiver = OtlpReceiver()

    async def scenario() -> subprocess.CompletedProcess[str]:
        url = await receiver.start()
        proc = await asyncio.create_subprocess_exec(
            *MCPTAPE, "export", "last", "--db", str(recorded), "--otlp", url,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        await receiver.close()
        return subprocess.CompletedProcess([], proc.returncode or 0, out.decode(), err.decode())

    proc = asyncio.run(scenario())
    assert proc.returncode == 0, proc.stderr
    call = receiver.named("tools/call echo")[0]
    assert (call.trace_id, call.parent_span_id) == (TRACE_ID, PARENT_ID)
    assert f"exported {len(receiver.spans)} spans" in proc.stderr
    assert receiver.histogram("mcp.client.operation.duration")


def test_export_otlp_to_a_closed_port_is_one_line_and_exit_2(recorded: Path) -> None:
    from tests.helpers.http_servers import free_port

    proc = _export(recorded, "--otlp", f"http://127.0.0.1:{free_port()}")
    assert proc.returncode == 2
    assert proc.stderr.startswith("mcptape: error: the OTLP receiver at") and proc.stderr.count("\n") == 1


def test_format_har_gives_each_http_exchange_of_a_session_over_streamable_http(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    with everything_http("streamableHttp") as url:
        proc = subprocess.run(
            [*MCPTAPE, "call", "-m", "tools/list", "--url", url, "--transport", "http", "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "s.har"
    proc = _export(db, "--format", "har", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    log = json.loads(out.read_text())["log"]
    assert log["version"] == "1.2" and log["creator"]["name"] == "mcptape"
    entries = log["entries"]
    bodies = [
        json.loads(e["request"]["postData"]["text"]).get("method")
        for e in entries
        if "postData" in e["request"]
    ]
    # (call asks `server/discover` first: this server answers it with an error, then `initialize`)
    assert [b for b in bodies if b != "server/discover"] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    by_method = {
        json.loads(e["request"]["postData"]["text"]).get("method"): e
        for e in entries
        if "postData" in e["request"]
    }
    init = by_method["initialize"]
    assert init["request"]["method"] == "POST" and init["request"]["url"] == url
    assert init["response"]["status"] == 200
    headers = {h["name"].lower(): h["value"] for h in init["response"]["headers"]}
    assert "mcp-session-id" in headers
    assert '"serverInfo"' in init["response"]["content"]["text"]
    assert by_method["notifications/initialized"]["response"]["status"] == 202
    assert by_method["server/discover"]["response"]["status"] == 0  # the server refused it: no HTTP answer
    listed = by_method["tools/list"]["response"]["content"]
    assert '"echo"' in listed["text"] and listed["size"] == len(listed["text"].encode())
    assert all(e["time"] >= 0 and e["startedDateTime"].endswith("Z") for e in entries)
