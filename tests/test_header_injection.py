"""Header values with line breaks (from a config file, a flag or an environment variable)
are refused in one line before anything is sent: they would inject headers, and the
HTTP client refused them with a traceback while `call` waited for its timeout."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mcptape.proxy.http.headers import (
    HeaderError,
    check_header,
    expand_env,
    expand_headers,
    parse_header_flag,
)
from tests.helpers.paths import MCPTAPE

INJECTED = "v\r\nInjected: 1"


@pytest.mark.parametrize("value", [INJECTED, "v\nX: 1", "v\rX", "a\0b"])
def test_a_value_with_a_line_break_or_nul_is_refused(value: str) -> None:
    with pytest.raises(HeaderError, match="line break or NUL"):
        check_header("X-A", value)
    with pytest.raises(HeaderError):
        expand_headers({"X-A": value})


def test_names_and_expanded_values_are_checked_too() -> None:
    with pytest.raises(HeaderError, match="not a valid HTTP header name"):
        expand_headers({"X A": "v"})
    with pytest.raises(HeaderError, match="holds a line break"):
        expand_env("Bearer ${T}", {"T": "x\r\nInjected: 1"})
    assert expand_env("Bearer ${T}", {"T": "x"}) == "Bearer x"
    assert parse_header_flag("X-Team:  a b ") == ("X-Team", "a b")
    assert expand_headers({"X-A": "${T}"}, {"T": "ok"}) == {"X-A": "ok"}


@pytest.mark.slow
def test_call_refuses_such_headers_at_once_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"r": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-A": INJECTED}}}})
    )
    base = [*MCPTAPE, "call", "--no-record", "-m", "tools/list", "--timeout", "20"]
    for args, says in (
        (["--config", str(config), "--server", "r"], "upstream 'r': header 'X-A' has a line break"),
        (["--url", "http://127.0.0.1:9/mcp", "--header", f"X-A: {INJECTED}"], "--header: header 'X-A'"),
        (["--url", "http://127.0.0.1:9/mcp", "--token", "a\nb"], "--token has a line break"),
    ):
        done = subprocess.run(
            [*base, *args], capture_output=True, text=True, timeout=60, env=dict(os.environ)
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith("mcptape: error") and says in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
