"""`mcptape call` as a user runs it: real processes against server-everything and tests/servers/paged.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import MCPTAPE, ROOT, require_everything

pytestmark = pytest.mark.slow

PAGED = [sys.executable, str(ROOT / "tests" / "servers" / "paged.py")]
DOC = "demo://resource/static/document/architecture.md"
REMOTE_USAGE_ERROR = (["-m", "ping", "--url", "ftp://127.0.0.1/mcp"], "is not an http:// or https:// URL")


def everything() -> list[str]:
    cmd = require_everything()
    return cmd


def call(
    *args: str, server: list[str] | None = None, db: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `mcptape call ARGS -- SERVER` (unrecorded unless ``db``)."""
    argv = [*MCPTAPE, "call", *args]
    argv += ["--db", str(db)] if db is not None else ["--no-record"]
    if server is not None:
        argv += ["--", *server]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(argv, capture_output=True, text=True, input=stdin, timeout=60, env=env)


def out(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)


def test_tools_list_prints_the_raw_result_and_exits_0() -> None:
    proc = call("-m", "tools/list", server=everything())
    assert proc.returncode == 0, proc.stderr
    names = [tool["name"] for tool in out(proc)["tools"]]
    assert "echo" in names and "get-sum" in names
    # Without --handle-* rules mcptape declares no sampling, so the server offers no sampling tool.
    assert "trigger-sampling-request" not in names


def test_every_method_runs_on_one_connection_through_a_script() -> None:
    script = [
        {"method": "server/info"},
        {"method": "ping"},
        {"method": "tools/call", "toolName": "echo", "toolArgs": {"message": "hi"}},
        {"method": "resources/list"},
        {"method": "resources/templates/list"},
        {"method": "resources/read", "uri": DOC},
        {"method": "resources/subscribe", "uri": DOC},
        {"method": "resources/unsubscribe", "uri": DOC},
        {"method": "prompts/list"},
        {"method": "prompts/get", "promptName": "args-prompt", "promptArgs": {"city": "Paris"}},
        {
            "method": "completion/complete",
            "ref": "ref/prompt/completable-prompt",
            "argumentName": "department",
            "argumentValue": "E",
        },
        {"method": "logging/setLevel", "level": "debug"},
        {"method": "tasks/list"},
        {"method": "discover"},
    ]
    proc = call("--script", "-", "--structured", server=everything(), stdin=json.dumps(script))
    assert proc.returncode == 0, proc.stderr
    envelopes = out(proc)
    assert [e["method"] for e in envelopes] == [s["method"] for s in script]
    assert all(e["success"] for e in envelopes), [e["error"] for e in envelopes if not e["success"]]
    results = [e["result"] for e in envelopes]
    assert results[0]["serverInfo"]["name"] == "mcp-servers/everything"
    assert results[1] == {}
    assert results[2]["content"][0]["text"] == "Echo: hi"
    assert DOC in [r["uri"] for r in results[3]["resources"]]
    assert results[4]["resourceTemplates"]
    assert results[5]["contents"][0]["uri"] == DOC
    assert "Paris" in results[9]["messages"][0]["content"]["text"]
    assert results[10]["completion"]["values"] == ["Engineering"]
    assert results[12]["tasks"] == []
    assert {"tools", "resources", "resourceTemplates", "prompts", "capabilities"} <= set(results[13])


def test_tool_args_are_coerced_by_the_input_schema() -> None:
    proc = call(
        "-m",
        "tools/call",
        "--tool-name",
        "typed",
        "--tool-arg",
        "n=1.5",
        "--tool-arg",
        "count=3",
        "--tool-arg",
        "on=yes",
        "--tool-arg",
        'tags=["a", "b"]',
        "--tool-arg",
        'opts={"k": 1}',
        "--tool-arg",
        "name=42",
        "--tool-arg",
        "maybe=null",
        "--tool-args",
        '{"name": "overridden", "extra": true}',
        server=PAGED,
    )
    assert proc.returncode == 0, proc.stderr
    assert out(proc)["structuredContent"]["arguments"] == {
        "n": 1.5,
        "count": 3,
        "on": True,
        "tags": ["a", "b"],
        "opts": {"k": 1},
        "name": "42",
        "maybe": None,
        "extra": True,
    }


def test_a_value_the_schema_refuses_is_a_validation_error_before_the_call() -> None:
    proc = call(
        "-m", "tools/call", "--tool-name", "typed", "--tool-arg", "count=many", "--structured", server=PAGED
    )
    assert proc.returncode == 1
    error = out(proc)["error"]
    assert error["category"] == "validation" and "count='many': expected integer" in error["message"]


def test_lists_paginate_to_the_end_unless_a_cursor_is_given() -> None:
    whole = call("-m", "resources/list", server=PAGED)
    assert [r["name"] for r in out(whole)["resources"]] == [f"item-{i}" for i in range(5)]
    assert "nextCursor" not in out(whole)
    page = call("-m", "resources/list", "--cursor", "2", server=PAGED)
    assert [r["name"] for r in out(page)["resources"]] == ["item-2", "item-3"]
    assert out(page)["nextCursor"] == "4"


def test_a_method_the_server_did_not_advertise_fails_before_it_is_sent(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    proc = call("-m", "prompts/list", "--structured", server=PAGED, db=db)
    assert proc.returncode == 1
    envelope = out(proc)
    assert envelope["success"] is False and envelope["error"]["category"] == "capability"
    with sqlite3.connect(db) as conn:
        methods = {row[0] for row in conn.execute("select method from frames where method is not null")}
    assert "prompts/list" not in methods and "server/discover" in methods


def test_a_json_rpc_error_exits_2_with_its_code() -> None:
    proc = call("-m", "no/such", "--params", '{"x": 1}', "--structured", server=PAGED)
    assert proc.returncode == 2
    envelope = out(proc)
    assert envelope["error"]["code"] == -32601 and envelope["error"]["category"] == "protocol"
    assert envelope["structuredVersion"] == 1 and envelope["result"] is None
    assert set(envelope) == {
        "structuredVersion",
        "success",
        "method",
        "durationMs",
        "result",
        "error",
        "logs",
        "serverRequests",
        "notifications",
    }


def test_a_tool_error_exits_0_or_2_with_fail_on_error() -> None:
    plain = call("-m", "tools/call", "--tool-name", "fail", "--structured", server=PAGED)
    assert plain.returncode == 0
    envelope = out(plain)
    assert envelope["success"] is False
    assert envelope["error"]["category"] == "application" and envelope["error"]["message"] == "it failed"
    assert envelope["result"]["isError"] is True
    strict = call("-m", "tools/call", "--tool-name", "fail", "--fail-on-error", server=PAGED)
    assert strict.returncode == 2
    assert out(strict)["isError"] is True and "it failed" in strict.stderr


def test_output_schema_validation() -> None:
    good = call("-m", "tools/call", "--tool-name", "typed", "--output-schema-validate", server=PAGED)
    assert good.returncode == 0, good.stderr
    bad = call(
        "-m",
        "tools/call",
        "--tool-name",
        "bad-output",
        "--output-schema-validate",
        "--structured",
        server=PAGED,
    )
    assert bad.returncode == 1
    assert out(bad)["error"]["category"] == "validation"
    assert "at total: 'not a number' is not of type 'integer'" in out(bad)["error"]["message"]


def test_the_whole_operation_timeout_exits_124() -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(30)"]
    proc = call("-m", "tools/list", "--timeout", "1", "--structured", server=silent)
    assert proc.returncode == 124
    assert out(proc)["error"]["category"] == "timeout"


def test_progress_keeps_a_long_call_alive_past_the_request_timeout() -> None:
    proc = call(
        "-m",
        "tools/call",
        "--tool-name",
        "trigger-long-running-operation",
        "--tool-args",
        '{"duration": 4, "steps": 8}',  # a progress notification every 0.5 s for 4 s
        "--request-timeout",
        "2",
        "--structured",
        server=everything(),
    )
    assert proc.returncode == 0, proc.stderr
    envelope = out(proc)
    assert envelope["success"] is True
    assert [n["method"] for n in envelope["notifications"]].count("notifications/progress") == 8


def test_logs_go_to_stderr_and_into_the_envelope() -> None:
    args = ["-m", "tools/call", "--tool-name", "log", "--tool-arg", 'levels=["info","error"]']
    proc = call(*args, "--protocol-version", "2025-11-25", "--structured", server=PAGED)
    assert proc.returncode == 0, proc.stderr
    assert [log["level"] for log in out(proc)["logs"]] == ["info", "error"]
    assert "mcptape: log error [paged]: a error message" in proc.stderr


def test_server_requests_are_declined_by_default_with_a_warning_and_captured() -> None:
    proc = call(
        "-m",
        "tools/call",
        "--tool-name",
        "ask",
        "--protocol-version",
        "2025-11-25",
        "--structured",
        server=PAGED,
    )
    assert proc.returncode == 0, proc.stderr
    requests = out(proc)["serverRequests"]
    assert [(r["method"], r["answeredBy"]) for r in requests] == [
        ("roots/list", "default"),
        ("sampling/createMessage", "default"),
        ("elicitation/create", "default"),
    ]
    assert requests[2]["result"] == {"action": "decline"}
    assert proc.stderr.count("declined") == 3


def test_handle_flags_answer_the_servers_sampling_request() -> None:
    args = ["-m", "tools/call", "--tool-name", "trigger-sampling-request", "--tool-arg", "prompt=hello"]
    proc = call(*args, "--handle-sampling", "auto", "--structured", server=everything())
    assert proc.returncode == 0, proc.stderr
    envelope = out(proc)
    assert envelope["serverRequests"][0]["method"] == "sampling/createMessage"
    assert envelope["serverRequests"][0]["answeredBy"] == "rule"
    assert "mcptape: automatic sampling response" in json.dumps(envelope["result"])


def test_a_task_is_polled_to_its_result() -> None:
    args = ["-m", "tools/call", "--tool-name", "simulate-research-query", "--tool-arg", "topic=tape"]
    proc = call(
        *args,
        "--run-as-task",
        "--poll",
        "--poll-interval",
        "0.2",
        "--handle-elicitation",
        "auto",
        server=everything(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Research Report: tape" in out(proc)["content"][0]["text"]


def test_script_control_flow_and_references() -> None:
    script = [
        {"method": "tools/list"},
        {"method": "tools/call", "toolName": {"$ref": "0/tools/0/name"}, "toolArg": {"name": "ref"}},
        {"method": "no/such", "onError": "continue"},
        {"method": "no/such", "onError": "skip-to:5"},
        {"method": "ping"},
        {"method": "tools/call", "toolName": "fail", "onError": "stop"},
        {"method": "ping"},
    ]
    proc = call("--script", "-", "--structured", "--fail-on-error", server=PAGED, stdin=json.dumps(script))
    envelopes = out(proc)
    assert [(e["method"], e["success"]) for e in envelopes] == [
        ("tools/list", True),
        ("tools/call", True),
        ("no/such", False),
        ("no/such", False),
        ("tools/call", False),  # step 4 skipped; step 5 stops the script: step 6 never runs
    ]
    assert envelopes[1]["result"]["structuredContent"]["arguments"] == {"name": "ref"}
    assert proc.returncode == 2


def test_a_bad_script_step_is_a_usage_error_naming_its_index_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    bad = [{"method": "ping"}, {"method": "tools/call", "toolName": {"$ref": "5/x"}}]
    proc = call("--script", "-", server=server, stdin=json.dumps(bad))
    assert proc.returncode == 1
    assert proc.stderr.startswith("mcptape: error: --script -: step 1: $ref '5/x'")
    assert len(proc.stderr.splitlines()) == 1
    assert not marker.exists()


def test_follow_streams_notifications_and_rereads_updated_resources() -> None:
    script = [
        {"method": "resources/subscribe", "uri": DOC},
        {"method": "tools/call", "toolName": "toggle-subscriber-updates"},
    ]
    # The timeout counts the server's start too: on a loaded machine that alone can take 2 s.
    proc = call("--script", "-", "--follow", "--timeout", "4", server=everything(), stdin=json.dumps(script))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    updated = [e for e in events if e.get("method") == "notifications/resources/updated"]
    assert updated and updated[0]["params"]["uri"] == DOC
    reread = [e for e in events if e["type"] == "resource"]
    assert reread and reread[0]["result"]["contents"][0]["uri"] == DOC
    # The script's own results come first among what is followed: an agent gets them too.
    results = [e for e in events if e["type"] == "result"]
    assert [(e["step"], e["method"]) for e in results] == [(0, "resources/subscribe"), (1, "tools/call")]
    assert results[1]["result"]["content"][0]["type"] == "text"


def test_the_call_session_is_recorded_as_mode_call(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    proc = call(
        "-m",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=taped",
        "--name",
        "ci",
        server=everything(),
        db=db,
    )
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:
        mode, name, transport = conn.execute("select mode, name, transport from sessions").fetchone()
        frames = conn.execute("select direction, method, text from frames order by seq").fetchall()
    assert (mode, name, transport) == ("call", "ci", "inproc->stdio")
    assert [(d, m) for d, m, _ in frames if m in ("initialize", "tools/call")] == [
        ("c2s", "initialize"),
        ("s2c", "initialize"),  # a response carries its request's method
        ("c2s", "tools/call"),
        ("s2c", "tools/call"),
    ]
    assert any("Echo: taped" in text for _, _, text in frames)


def test_config_server_entry_is_called(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"paged": {"command": PAGED[0], "args": PAGED[1:]}}}))
    proc = call("-m", "server/info", "--config", str(config), "--server", "paged")
    assert proc.returncode == 0, proc.stderr
    assert out(proc)["serverInfo"]["name"] == "paged"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["-m", "ping"], "no server"),
        (["--bogus"], "No such option '--bogus'"),
        REMOTE_USAGE_ERROR,
        (["-m", "ping", "--params", "{nope", "--", "true"], "--params: not valid JSON"),
        (["--script", "/nonexistent/steps.json", "--", "true"], "cannot read it"),
        (["-m", "ping", "--server", "x"], "--server NAME needs --config FILE"),
        (["-m", "ping", "--protocol-version", "1999", "--", "true"], "unknown protocol version"),
        (["-m", "ping", "--handle-sampling", "maybe", "--", "true"], "--handle-sampling"),
        (["-m", "tools/call", "--tool-arg", "novalue", "--", "true"], "expected NAME=VALUE"),
    ],
)
def test_usage_errors_are_one_line_with_exit_1(args: list[str], fragment: str) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "call", "--no-record", *args], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptape: error: "), proc.stderr
    assert fragment in lines[0]


def test_a_server_that_cannot_start_is_a_transport_error(tmp_path: Path) -> None:
    proc = call("-m", "ping", "--structured", server=[str(tmp_path / "missing-server")])
    assert proc.returncode == 1
    assert out(proc)["error"]["category"] == "transport"


def test_a_signal_cuts_a_call_short_with_128_plus_n_and_the_session_is_recorded(tmp_path: Path) -> None:
    import signal
    import time

    db = tmp_path / "rec.db"
    args = ["-m", "tools/call", "--tool-name", "trigger-long-running-operation", "--tool-args"]
    args += ['{"duration": 30, "steps": 3}', "-v", "--db", str(db), "--", *everything()]
    proc = subprocess.Popen(
        [*MCPTAPE, "call", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # wait until the call is under way, however loaded the machine is
        seen.append(line)
        if "state: connected" in line:
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=30)
    err_text = "".join(seen) + rest
    assert proc.returncode == 130, err_text
    assert "Traceback" not in err_text and "stopped by SIGINT" in err_text
    with sqlite3.connect(db) as conn:
        methods = {row[0] for row in conn.execute("select method from frames")}
    assert "tools/call" in methods


def test_a_signal_ends_a_follow_with_success() -> None:
    import signal

    argv = [*MCPTAPE, "call", "-m", "server/info", "--follow", "--timeout", "60", "--no-record", "--", *PAGED]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # following from here on
    proc.send_signal(signal.SIGTERM)
    _, err_text = proc.communicate(timeout=30)
    assert proc.returncode == 0, err_text
    event = json.loads(first)
    assert (event["type"], event["method"], event["result"]["serverInfo"]["name"]) == (
        "result",
        "server/info",
        "paged",
    )


def test_a_tool_the_server_lists_only_to_sampling_clients_is_explained() -> None:
    args = ("-m", "tools/call", "--tool-name", "trigger-sampling-request", "--tool-arg", "prompt=hi")
    refused = call(*args, server=everything())
    assert refused.returncode == 1
    assert "no tool named 'trigger-sampling-request' (it lists echo," in refused.stderr
    assert "(--handle-sampling, --handle-elicitation, --roots)" in refused.stderr
    sampled = call(*args, "--handle-sampling", "auto", server=everything())
    assert sampled.returncode == 0, sampled.stderr
