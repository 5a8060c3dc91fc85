"""`mcptape replay --url` and a remote `--upstream`: the recorded client frames re-drive a server over HTTP.

A real `mcp` SDK client is recorded (`mcptape record --url`) against the reference
`@modelcontextprotocol/server-everything` over streamable HTTP, including the sampling
and elicitation requests the server makes; the recording is then replayed against a
fresh instance of that server over streamable HTTP and over legacy SSE.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.db import query
from tests.helpers.http_servers import everything_http, free_port
from tests.helpers.paths import MCPTAPE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


async def _sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="canned hello"), model="test-model"
    )


async def _elicitation(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"color": "blue"})


def scenario(params: StdioServerParameters) -> None:
    """Tools, a resource, a prompt, and the server's own sampling and elicitation requests (no roots:
    server-everything asks for roots on a timer of its own, which no replay can reproduce)."""

    async def main() -> None:
        async with Client(
            params, mode="legacy", sampling_callback=_sampling, elicitation_callback=_elicitation
        ) as client:
            await client.list_tools()
            await client.call_tool("echo", {"message": "héllo ✓"})
            await client.call_tool("get-sum", {"a": 2, "b": 3.5})
            await client.read_resource("demo://resource/static/document/architecture.md")
            await client.get_prompt("args-prompt", {"city": "Paris", "state": "TX"})
            await client.call_tool("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 10})
            await client.call_tool("trigger-elicitation-request", {})

    anyio.run(main)


def mcptape(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, timeout=90)


def record_over(db: Path, server: str, transport: str) -> None:
    with everything_http(server) as url:
        argv = [
            *MCPTAPE,
            "record",
            "--db",
            str(db),
            "--name",
            "remote",
            "--url",
            url,
            "--transport",
            transport,
        ]
        scenario(StdioServerParameters(command=argv[0], args=argv[1:]))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding one session, `remote`, recorded over streamable HTTP."""
    db = tmp_path_factory.mktemp("replay-http") / "rec.db"
    record_over(db, "streamableHttp", "http")
    return db


@pytest.mark.parametrize(("server", "transport"), [("streamableHttp", "http"), ("sse", "sse")])
def test_replay_url_redrives_a_fresh_remote_server_and_is_recorded(
    recorded: Path, tmp_path: Path, server: str, transport: str
) -> None:
    db = tmp_path / "rec.db"
    if server == "sse":
        # server-everything announces tools/list_changed over SSE and not over streamable
        # HTTP: a recording made over SSE is what an SSE replay is compared with.
        record_over(db, server, transport)
    else:
        db.write_bytes(recorded.read_bytes())
    report = tmp_path / "report.json"
    with everything_http(server) as url:
        proc = mcptape(
            "replay",
            "remote",
            "--db",
            str(db),
            "--url",
            url,
            "--transport",
            transport,
            "--report",
            str(report),
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("replayed 1 recording(s), 8 exchanges: 8 match, 0 differ")
    ((original,),) = query(db, "select id from sessions where mode='record'")
    ((mode, session_transport, upstream, replay_of, status),) = query(
        db, "select mode, transport, upstream, replay_of, status from sessions where mode='replay'"
    )
    assert (mode, session_transport, upstream, replay_of) == ("replay", f"tape->{transport}", url, original)
    assert status == "closed"
    # The server's sampling and elicitation requests were answered from the recording.
    answered = query(
        db,
        "select method, answered_by, json_extract(response, '$.result') from server_requests "
        "where session_id=(select id from sessions where mode='replay') and method != 'ping' order by 1",
    )
    assert [(m, by) for m, by, _ in answered] == [
        ("elicitation/create", "client"),
        ("sampling/createMessage", "client"),
    ]
    assert "canned hello" in answered[1][2] and json.loads(answered[0][2])["content"] == {"color": "blue"}
    assert json.loads(report.read_text())["ok"] is True


def test_replay_upstream_naming_a_remote_entry_replays_against_its_url(
    recorded: Path, tmp_path: Path
) -> None:
    db = tmp_path / "rec.db"
    db.write_bytes(recorded.read_bytes())
    config = tmp_path / "mcp.json"
    with everything_http("streamableHttp") as url:
        config.write_text(json.dumps({"mcpServers": {"everything": {"type": "http", "url": url}}}))
        proc = mcptape(
            "replay", "remote", "--db", str(db), "--upstream", "everything", "--config", str(config)
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert query(db, "select transport, upstream from sessions where mode='replay'") == [("tape->http", url)]
    # The entry's headers are expanded as record expands them: an unset variable is a usage error.
    config.write_text(
        json.dumps(
            {"mcpServers": {"everything": {"url": url, "headers": {"X-Key": "${H12_UNSET_VARIABLE}"}}}}
        )
    )
    assert_one_line_error(
        mcptape("replay", "remote", "--db", str(db), "--upstream", "everything", "--config", str(config)),
        "H12_UNSET_VARIABLE",
    )


def test_replay_url_errors_are_one_line(recorded: Path, tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    db.write_bytes(recorded.read_bytes())
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    proc = mcptape(
        "replay", "remote", "--db", str(db), "--url", dead, "--transport", "http", "--timeout", "5"
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot reach the MCP server" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # auto (the default) tries streamable HTTP then legacy SSE: the report still says why.
    auto = mcptape("replay", "remote", "--db", str(db), "--url", dead, "--timeout", "5")
    assert auto.returncode == 2, auto.stdout + auto.stderr
    assert "cannot reach the MCP server" in auto.stdout, auto.stdout
    assert_one_line_error(
        mcptape("replay", "remote", "--db", str(db), "--header", "X-A: b", "--", "true"),
        "--transport and --header apply to a remote server",
    )
    assert_one_line_error(
        mcptape("replay", "remote", "--db", str(db), "--url", "ftp://example.com/mcp"), "is not an http"
    )
    assert_one_line_error(
        mcptape("replay", "remote", "--db", str(db), "--url", dead, "--", "true"), "give one server"
    )
