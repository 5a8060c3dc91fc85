"""The OAuth-on-401 choices as plain values: challenges, metadata locations, scopes, client authentication."""

from __future__ import annotations

import base64

from mcptape.client.authpolicy import (
    Challenge,
    auth_refusal,
    authenticate,
    choose_auth_method,
    choose_scope,
    fallback_endpoints,
    machine_to_machine,
    parse_challenge,
    resource_matches,
    resource_metadata_urls,
    server_metadata_urls,
)


def test_a_bearer_challenge_gives_its_error_scope_and_metadata_url() -> None:
    header = (
        'Bearer realm="x", error="insufficient_scope", scope="a b", '
        'resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"'
    )
    assert parse_challenge(header) == Challenge(
        "insufficient_scope", "a b", "https://h/.well-known/oauth-protected-resource/mcp", "x"
    )
    assert parse_challenge('Bearer realm="mcptape"').gateway_token  # mcptape's gateway: no OAuth flow
    assert not parse_challenge(header).gateway_token
    assert parse_challenge('Basic realm="r", Bearer error=invalid_token') == Challenge("invalid_token")
    assert parse_challenge('Bearer scope="say \\"hi\\""').scope == 'say "hi"'
    assert parse_challenge("Basic realm=x") == Challenge() == parse_challenge(None)


def test_resource_metadata_is_looked_for_where_the_challenge_says_then_path_suffixed_then_at_the_root() -> (
    None
):
    assert resource_metadata_urls(
        "https://h/v1/mcp", Challenge(resource_metadata="https://h/custom.json")
    ) == [
        "https://h/custom.json",
        "https://h/.well-known/oauth-protected-resource/v1/mcp",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls("https://h", Challenge()) == [
        "https://h/.well-known/oauth-protected-resource"
    ]


def test_an_issuer_with_a_path_never_gets_the_root_metadata_url() -> None:
    assert server_metadata_urls("https://as/tenant1") == [
        "https://as/.well-known/oauth-authorization-server/tenant1",
        "https://as/.well-known/openid-configuration/tenant1",
        "https://as/tenant1/.well-known/openid-configuration",
    ]
    assert server_metadata_urls("https://as/") == [
        "https://as/.well-known/oauth-authorization-server",
        "https://as/.well-known/openid-configuration",
    ]
    assert fallback_endpoints("http://h:1/")["token_endpoint"] == "http://h:1/token"


def test_metadata_for_another_resource_is_refused() -> None:
    assert resource_matches("https://h/mcp", "https://h/mcp/")
    assert resource_matches("https://h/mcp", "https://H")  # a parent, host case aside
    assert not resource_matches("https://h/mcp", "https://evil.example/mcp")
    assert not resource_matches("https://h/mcp", "https://h/mcpx")
    assert not resource_matches("https://h/mcp", "http://h/mcp")


def test_scopes_come_from_the_challenge_else_the_resource_else_none() -> None:
    prm = {"scopes_supported": ["a", "b"]}
    assert choose_scope(Challenge(scope="c d"), prm) == {"c", "d"}
    assert choose_scope(Challenge(), prm) == {"a", "b"}
    assert choose_scope(Challenge(), {}) == set() == choose_scope(Challenge(), None)


def test_the_token_endpoint_authentication_follows_registration_then_the_server() -> None:
    secret = {"client_id": "c", "client_secret": "s"}
    assert choose_auth_method({}, {**secret, "token_endpoint_auth_method": "client_secret_post"}) == (
        "client_secret_post"
    )
    assert choose_auth_method({"token_endpoint_auth_methods_supported": ["client_secret_post"]}, secret) == (
        "client_secret_post"
    )
    assert choose_auth_method({}, secret) == "client_secret_basic"
    assert choose_auth_method({}, {"client_id": "c"}) == "none"


def test_client_credentials_go_in_a_basic_header_or_in_the_form() -> None:
    form: dict[str, str] = {}
    headers = authenticate("client_secret_basic", {"client_id": "a:b", "client_secret": "p@ss"}, form)
    assert base64.b64decode(headers["Authorization"][6:]) == b"a%3Ab:p%40ss" and form == {}
    form = {}
    assert authenticate("client_secret_post", {"client_id": "c", "client_secret": "s"}, form) == {}
    assert form == {"client_id": "c", "client_secret": "s"}
    form = {}
    assert authenticate("none", {"client_id": "c", "client_secret": "s"}, form) == {} and form == {
        "client_id": "c"
    }


def test_client_credentials_grant_only_where_the_code_flow_is_not_offered() -> None:
    only_cc = {"grant_types_supported": ["client_credentials"]}
    assert machine_to_machine(only_cc, {"client_id": "c", "client_secret": "s"})
    assert not machine_to_machine(only_cc, {"client_id": "c"})
    assert not machine_to_machine(
        {"grant_types_supported": ["authorization_code", "client_credentials"]},
        {
            "client_id": "c",
            "client_secret": "s",
        },
    )


def test_only_401_and_403_are_auth_refusals() -> None:
    assert auth_refusal({"status": 401, "www_authenticate": "Bearer"}) == (401, "Bearer")
    assert auth_refusal({"status": 403}) == (403, None)
    assert auth_refusal({"status": 500}) is None and auth_refusal(None) is None
