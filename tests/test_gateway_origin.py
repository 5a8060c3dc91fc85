"""The gateway's Host and Origin checks (pure), against the spoofing variants a DNS-rebinding
page or a hostile client tries."""

from __future__ import annotations

import pytest

from mcptape.gateway.security import allowed_hosts, check_token, origin_allowed

HOSTS = allowed_hosts("127.0.0.1", 8808)


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:8808", "HTTP://LOCALHOST:8808", "http://[::1]:8808", "https://localhost:8808", None],
)
def test_the_gateways_own_origins_pass(origin: str | None) -> None:
    assert origin_allowed(origin, HOSTS)


@pytest.mark.parametrize(
    "origin",
    [
        "null",
        "file://",
        "http://127.0.0.1",  # port 80: another site on this machine
        "https://127.0.0.1",
        "http://localhost.:8808",
        "http://localhost.evil.com:8808",
        "http://evil.com:8808",
        "http://a@127.0.0.1:8808",
        "http://127.0.0.1:8808@evil.com",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:8809",
        "ws://127.0.0.1:8808",
        "http://[::1",
    ],
)
def test_spoofed_origins_are_refused(origin: str) -> None:
    assert not origin_allowed(origin, HOSTS)


def test_an_origin_the_user_allowed_passes_as_written() -> None:
    assert origin_allowed("https://app.example.com", HOSTS, ["https://app.example.com"])
    assert not origin_allowed("https://app.example.com.evil", HOSTS, ["https://app.example.com"])


@pytest.mark.parametrize("host", ["127.0.0.1:8808", "localhost:8808", "[::1]:8808", "localhost", "127.0.0.1"])
def test_loopback_hosts_pass(host: str) -> None:
    assert host in HOSTS


@pytest.mark.parametrize(
    "host", ["localhost.:8808", "localhost.evil.com:8808", "127.0.0.1:8808@evil.com", "", "evil.com"]
)
def test_other_hosts_are_refused(host: str) -> None:
    assert host.lower() not in HOSTS


def test_tokens_compare_whole_and_bytes_that_are_no_utf8_do_not_raise() -> None:
    assert check_token({"Authorization": "Bearer tok"}, "tok").ok
    assert check_token({"authorization": "bearer tok"} | {"Authorization": "bearer tok"}, "tok").ok
    assert not check_token({"Authorization": "Bearer to"}, "tok").ok
    assert not check_token({"Authorization": "Bearer tokk"}, "tok").ok
    assert not check_token({"X-Mcptape-Token": "\udcff\udcfe"}, "tok").ok
    assert not check_token({"Authorization": "Basic tok"}, "tok").ok
