"""Which headers matter, which never cross a proxy, --header flags and ${ENV} (plain values)."""

from __future__ import annotations

import pytest

from mcptape.proxy.http.headers import (
    HeaderError,
    end_to_end,
    expand_env,
    expand_headers,
    parse_header_flag,
    routing_headers,
    that_matter,
)
from mcptape.redact import placeholder


def test_header_flags_parse_and_bad_ones_say_the_expected_form() -> None:
    assert parse_header_flag("X-Team:  a b ") == ("X-Team", "a b")
    assert parse_header_flag("Authorization: Bearer x:y") == ("Authorization", "Bearer x:y")
    for bad in ("no colon", ": value", "Bad Name: v"):
        with pytest.raises(HeaderError, match="is not 'Name: value'"):
            parse_header_flag(bad)


def test_env_references_expand_and_a_missing_variable_is_named() -> None:
    env = {"TOKEN": "s3cret", "TEAM": "a"}
    assert expand_env("Bearer ${TOKEN}", env) == "Bearer s3cret"
    assert expand_headers({"X": "${TEAM}-${TEAM}", "Y": "$TEAM"}, env) == {"X": "a-a", "Y": "$TEAM"}
    with pytest.raises(HeaderError, match=r"\$\{NOPE\}"):
        expand_env("${NOPE}", env)


def test_hop_by_hop_headers_and_those_connection_names_are_dropped() -> None:
    headers = [
        ("Connection", "keep-alive, X-Private"),
        ("X-Private", "1"),
        ("Transfer-Encoding", "chunked"),
        ("Host", "up"),
        ("Mcp-Session-Id", "abc"),
        ("Authorization", "Bearer t"),
    ]
    assert end_to_end(headers) == [("Mcp-Session-Id", "abc"), ("Authorization", "Bearer t")]
    assert end_to_end(headers, drop=["authorization"]) == [("Mcp-Session-Id", "abc")]


def test_headers_that_matter_are_kept_with_credentials_redacted() -> None:
    kept = that_matter(
        [
            ("Mcp-Session-Id", "abc"),
            ("Authorization", "Bearer topsecret"),
            ("X-Api-Key", "k"),
            ("Date", "today"),
            ("Content-Type", "text/event-stream"),
        ],
        extra_names=["x-api-key"],
    )
    assert kept["Mcp-Session-Id"] == placeholder("abc") and kept["Content-Type"] == "text/event-stream"
    assert "Date" not in kept
    assert "topsecret" not in kept["Authorization"] and kept["Authorization"].startswith("Bearer ")
    assert kept["X-Api-Key"] != "k"
    # The same secret gives the same placeholder, so recordings stay comparable.
    assert that_matter([("Authorization", "Bearer topsecret")]) == {"Authorization": kept["Authorization"]}


def test_routing_headers_only_for_2026_requests() -> None:
    modern = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "héllo", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }
    headers = routing_headers(modern)
    assert headers["Mcp-Method"] == "tools/call" and headers["MCP-Protocol-Version"] == "2026-07-28"
    assert headers["Mcp-Name"].startswith("=?base64?")
    legacy = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    assert routing_headers(legacy) == {}
    assert routing_headers({"jsonrpc": "2.0", "method": "notifications/initialized"}) == {}
    assert routing_headers([modern]) == {}
