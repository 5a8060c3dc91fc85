"""`mcptape record --url`: a stdio client in front of a remote server over streamable HTTP or legacy SSE.

The client is the real `mcp` SDK client over stdio; the server is the reference
`@modelcontextprotocol/server-everything` run as `streamableHttp` and as `sse`. The same
scenario run directly against the server's HTTP endpoint must give the same results,
and the recording must hold the whole conversation with each frame's HTTP metadata.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp.client.sse import sse_client

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.db import query
from tests.helpers.http_servers import everything_http, free_port
from tests.helpers.paths import MCPTAPE
from tests.helpers.scenarios import run_everything_scenario

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


def record_url(db: Path, url: str, *extra: str) -> StdioServerParameters:
    argv = [*MCPTAPE, "record", "--db", str(db), "--name", "remote", "--url", url, *extra]
    return StdioServerParameters(command=argv[0], args=argv[1:])


@pytest.mark.parametrize(
    ("server", "transport", "actual"),
    [
        ("streamableHttp", "http", "http"),
        ("streamableHttp", "auto", "http"),
        ("sse", "sse", "sse"),
        ("sse", "auto", "sse"),
    ],
)
def test_record_url_gives_the_same_results_as_a_direct_connection(
    db_path: Path, server: str, transport: str, actual: str
) -> None:
    with everything_http(server) as url:
        plain = run_everything_scenario(url if server == "streamableHttp" else sse_client(url))  # type: ignore[arg-type]
        recorded = run_everything_scenario(record_url(db_path, url, "--transport", transport))
    assert recorded == plain
    assert "canned hello" in json.dumps(recorded["sampling"])

    ((name, status, mode, session_transport, upstream, client_name, server_name),) = query(
        db_path, "select name, status, mode, transport, upstream, client_name, server_name from sessions"
    )
    # The transport actually used, also when auto chose it.
    assert (name, status, mode, session_transport) == ("remote", "closed", "record", f"stdio->{actual}")
    assert upstream == url and client_name == "mcp" and server_name == "mcp-servers/everything"
    assert query(db_path, "select method from exchanges where direction='c2s' and response is null") == []
    # distinct: the server may also ask roots/list on its own when roots change.
    served = query(
        db_path, "select distinct method, answered_by from server_requests where method != 'ping' order by 1"
    )
    assert served == [
        ("elicitation/create", "client"),
        ("roots/list", "client"),
        ("sampling/createMessage", "client"),
    ]
    assert query(db_path, "select count(*) from frames where kind='malformed' or origin='proxy'") == [(0,)]
    # Every server frame says how it came over HTTP.
    streams = {
        s
        for (s,) in query(
            db_path, "select distinct json_extract(meta, '$.stream') from frames where direction='s2c'"
        )
    }
    events = [k for (k,) in query(db_path, "select kind from events order by id")]
    if actual == "http":
        assert streams <= {"post", "get"} and "post" in streams
        statuses = {
            s
            for (s,) in query(
                db_path, "select distinct json_extract(meta, '$.status') from frames where direction='s2c'"
            )
        }
        assert statuses == {200}
        sids = query(
            db_path,
            "select distinct json_extract(meta, '$.headers.\"mcp-session-id\"') from frames where direction='s2c' and json_extract(meta, '$.stream')='post'",
        )
        assert len(sids) == 1 and sids[0][0], (
            "the session id the server minted is in every POST response's metadata"
        )
        # ... and every client frame after the handshake says it was sent with that id.
        sent = query(
            db_path,
            "select json_extract(meta, '$.stream'), json_extract(meta, '$.headers.\"mcp-session-id\"') "
            "from frames where direction='c2s' and method != 'initialize'",
        )
        assert sent and set(sent) == {("post", sids[0][0])}
        assert "http_session" in events and "http_session_deleted" in events
    else:
        assert streams == {"sse"}
        assert "sse_endpoint" in events
        sent_on = {
            s
            for (s,) in query(
                db_path, "select json_extract(meta, '$.stream') from frames where direction='c2s'"
            )
        }
        if transport == "sse":  # with auto, the probe's first frame says it was POSTed as streamable HTTP
            assert sent_on == {"sse-endpoint"}
        assert ("transport_fallback" in events) == (transport == "auto")


def test_a_dead_url_answers_the_client_with_an_error_and_is_recorded(db_path: Path) -> None:
    port = free_port()
    proc = subprocess.run(
        [
            *MCPTAPE,
            "record",
            "--db",
            str(db_path),
            "--url",
            f"http://127.0.0.1:{port}/mcp",
            "--transport",
            "http",
        ],
        input=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n',
        capture_output=True,
        timeout=30,
    )
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["error"]["code"] == -32000
    assert "cannot reach the MCP server" in reply["error"]["message"]
    assert query(db_path, "select direction, origin from frames order by seq") == [
        ("c2s", "client"),
        ("s2c", "proxy"),
    ]
    assert query(db_path, "select count(*) from events where kind='error'") == [(1,)]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--url", "ftp://x/mcp"], "is not an http:// or https:// URL"),
        (["--url", "http://127.0.0.1:1/mcp", "--header", "no colon"], "is not 'Name: value'"),
        (
            ["--url", "http://127.0.0.1:1/mcp", "--header", "X: ${MCPTAPE_SURELY_UNSET}"],
            "MCPTAPE_SURELY_UNSET",
        ),
        (["--url", "http://127.0.0.1:1/mcp", "--", "cat"], "give one server"),
        (["--transport", "sse", "--", "cat"], "apply to a remote server"),
    ],
)
def test_bad_remote_flags_are_one_line_errors(
    args: list[str], fragment: str, cli_env: dict[str, str]
) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "record", *args], capture_output=True, text=True, env=cli_env, timeout=30
    )
    assert_one_line_error(proc, fragment)


def test_record_upstream_takes_a_remote_registry_entry_with_env_headers(
    db_path: Path, tmp_path: Path
) -> None:
    config = tmp_path / "servers.json"
    with everything_http("streamableHttp") as url:
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "everything": {
                            "url": url,
                            "type": "http",
                            "headers": {"X-Api-Key": "${MY_KEY}", "Authorization": "Bearer ${MY_KEY}"},
                        }
                    }
                }
            )
        )
        argv = [*MCPTAPE, "record", "--db", str(db_path), "--upstream", "everything", "--config", str(config)]
        import os

        os.environ["MY_KEY"] = "key-that-must-not-be-recorded"
        try:
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
            out = run_everything_scenario(params)
        finally:
            del os.environ["MY_KEY"]
    assert out["sum"]["content"][0]["text"] == "The sum of 2 and 3.5 is 5.5."
    assert query(db_path, "select name, transport from sessions") == [("everything", "stdio->http")]
    # The client's frames say how they went upstream, credentials as placeholders.
    sent = query(
        db_path,
        "select json_extract(meta, '$.http_method'), json_extract(meta, '$.headers.authorization') "
        "from frames where direction = 'c2s'",
    )
    assert sent and all(method == "POST" and auth.startswith("Bearer ") for method, auth in sent)
    con = sqlite3.connect(db_path)
    try:
        for table in ("sessions", "frames", "events"):
            dump = json.dumps(con.execute(f"select * from {table}").fetchall(), default=str)
            assert "key-that-must-not-be-recorded" not in dump
    finally:
        con.close()


def test_servers_lists_config_entries_and_builtins_with_their_transport(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "npx", "args": ["-y", "srv", "--api-key", "abc123"]},
                    "remote": {"url": "https://user:pw@example.com/mcp", "type": "sse"},
                }
            }
        )
    )
    proc = subprocess.run(
        [*MCPTAPE, "servers", "--config", str(config), "--json"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    listed = {r["name"]: r for r in json.loads(proc.stdout)}
    assert list(listed) == ["files", "remote", "debug-script", "demo", "recordings"]
    assert listed["remote"]["transport"] == "sse" and listed["files"]["transport"] == "stdio"
    assert listed["demo"]["source"] == "built-in"
    assert "abc123" not in proc.stdout and "pw@" not in proc.stdout
    missing = subprocess.run(
        [*MCPTAPE, "servers", "--config", str(tmp_path / "no.json")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert_one_line_error(missing, "does not exist")
