"""Redaction of secrets in command lines, environments, URLs and headers (pure)."""

from __future__ import annotations

import re

import pytest

from mcptape.config.registry import UpstreamSpec
from mcptape.redact import (
    PLACEHOLDER,
    placeholder,
    redact_argv,
    redact_headers,
    redact_text,
    redact_url,
)

P = placeholder


def test_a_placeholder_is_stable_within_a_process_and_differs_between_secrets() -> None:
    assert P("sk-abc") == P("sk-abc")
    assert P("sk-abc") != P("sk-abd")
    assert PLACEHOLDER.fullmatch(P("sk-abc"))
    assert P(P("sk-abc")) == P("sk-abc")  # never redacted twice


@pytest.mark.slow
def test_placeholders_are_keyed_per_process_so_old_ones_cannot_be_tested_against_guesses() -> None:
    import subprocess
    import sys

    code = "from mcptape.redact import placeholder; print(placeholder('hunter2'))"
    runs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout for _ in range(2)
    }
    assert len(runs) == 2 and all(PLACEHOLDER.search(r) for r in runs)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["srv", "--token", "abc123"], ["srv", "--token", P("abc123")]),
        (["srv", "--token=abc123"], ["srv", f"--token={P('abc123')}"]),
        (["srv", "--api-key", "k1", "--API_KEY=k2"], ["srv", "--api-key", P("k1"), f"--API_KEY={P('k2')}"]),
        (["srv", "--password", "pw", "--secret", "s"], ["srv", "--password", P("pw"), "--secret", P("s")]),
        (["srv", "--key", "k", "--client-secret", "c"], ["srv", "--key", P("k"), "--client-secret", P("c")]),
        (
            ["srv", "--github-pat", "ghp_x", "--access-token=t"],
            ["srv", "--github-pat", P("ghp_x"), f"--access-token={P('t')}"],
        ),
        (["srv", "--token", "--verbose"], ["srv", "--token", "--verbose"]),
        (["srv", "--token="], ["srv", "--token="]),
        (["srv", "--no-auth", "/tmp"], ["srv", "--no-auth", "/tmp"]),
        (
            ["srv", "--max-tokens", "100", "--port", "80", "/data"],
            ["srv", "--max-tokens", "100", "--port", "80", "/data"],
        ),
        (
            ["docker", "run", "-e", "GITHUB_TOKEN=ghp_1", "-e", "DEBUG=1"],
            ["docker", "run", "-e", f"GITHUB_TOKEN={P('ghp_1')}", "-e", "DEBUG=1"],
        ),
        (
            ["srv", "--header", "Authorization: Bearer tok"],
            ["srv", "--header", f"Authorization: Bearer {P('tok')}"],
        ),
        (["srv", "--header=X-Api-Key: k9"], ["srv", f"--header=X-Api-Key: {P('k9')}"]),
        (["curl", "-H", "authorization: bearer tok"], ["curl", "-H", f"authorization: bearer {P('tok')}"]),
        (["srv", "--db", "postgresql://me:pw@db/x"], ["srv", "--db", f"postgresql://me:{P('pw')}@db/x"]),
        (["srv", "--", "inner", "--token", "t2"], ["srv", "--", "inner", "--token", P("t2")]),
    ],
)
def test_redact_argv_hides_secret_flag_values_and_embedded_credentials(
    argv: list[str], expected: list[str]
) -> None:
    assert redact_argv(argv) == expected


def test_redact_argv_keeps_what_is_not_secret_byte_for_byte() -> None:
    argv = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp/a b", "--tool-timeout=5", "é"]
    assert redact_argv(argv) == argv


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:pw@example.com/mcp", f"https://user:{P('pw')}@example.com/mcp"),
        ("https://ghp_tok@github.com/x.git", f"https://{P('ghp_tok')}@github.com/x.git"),
        ("https://x.io/mcp?token=t1&mode=a", f"https://x.io/mcp?token={P('t1')}&mode=a"),
        (
            "https://x.io/mcp?mode=a&api_key=k&key=k2#f",
            f"https://x.io/mcp?mode=a&api_key={P('k')}&key={P('k2')}#f",
        ),
        (
            "https://x.io/s?X-Amz-Signature=ab&keyword=q",
            f"https://x.io/s?X-Amz-Signature={P('ab')}&keyword=q",
        ),
        ("https://x.io/mcp?token=", "https://x.io/mcp?token="),
        ("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"),
        ("not a url", "not a url"),
    ],
    # Placeholders are keyed per process: an id holding one differs between xdist workers.
    ids=lambda value: value if "«" not in value else "redacted",
)
def test_redact_url_hides_user_info_and_secret_query_parameters(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_text_leaves_ordinary_words_after_token_alone() -> None:
    assert redact_text("the token limit is high") == "the token limit is high"
    assert redact_text("Token abcdefgh1234") == f"Token {P('abcdefgh1234')}"


def test_redact_headers_hides_credentials_and_keeps_names_order_and_scheme() -> None:
    headers = {
        "Authorization": "Bearer eyJhbGci",
        "proxy-authorization": "Basic dXNlcjpwdw==",
        "Cookie": "a=1; session=xyz",
        "Set-Cookie": "session=xyz; HttpOnly",
        "X-Api-Key": "k",
        "Api-Key": "k2",
        "X-Auth-Token": "t",
        "X-Goog-Api-Key": "g",
        "X-Team": "blue",
        "Mcp-Session-Id": "abc",
        "Content-Type": "application/json",
        "X-Tenant": "acme",
    }
    out = redact_headers(headers, extra_names=["x-tenant"])
    assert list(out) == list(headers)
    assert out["Authorization"] == f"Bearer {P('eyJhbGci')}"
    assert out["proxy-authorization"] == f"Basic {P('dXNlcjpwdw==')}"
    for name in (
        "Cookie",
        "Set-Cookie",
        "X-Api-Key",
        "Api-Key",
        "X-Auth-Token",
        "X-Goog-Api-Key",
        "X-Tenant",
        "Mcp-Session-Id",  # whoever holds a session id can use the session: a credential
    ):
        assert out[name] == P(headers[name]), name
    for name in ("X-Team", "Content-Type"):
        assert out[name] == headers[name], name
    assert redact_headers({"Authorization": "opaque"}) == {"Authorization": P("opaque")}


def test_an_upstream_description_carries_no_secret() -> None:
    spec = UpstreamSpec("s", "stdio", command=["srv", "--api-key", "sk-live-1", "--db=postgres://u:pw@h/d"])
    text = spec.describe()
    assert "sk-live-1" not in text and ":pw@" not in text
    assert re.search(r"--api-key '«redacted:[0-9a-f]{8}»'", text)
    remote = UpstreamSpec("r", "http", url="https://me:pw@x.io/mcp?key=k")
    assert remote.describe() == f"https://me:{P('pw')}@x.io/mcp?key={P('k')}"
