"""Which stream a stdio upstream's message goes on behind streamable HTTP (plain values)."""

from __future__ import annotations

from mcptape.proxy.http.routing import Router


def req(rid: object, method: str = "tools/call", token: object = None) -> dict[str, object]:
    params: dict[str, object] = {"name": "x"}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def test_notifications_and_responses_open_no_stream() -> None:
    router = Router()
    assert router.opened("p1", {"jsonrpc": "2.0", "method": "notifications/initialized"}) is False
    assert router.opened("p2", {"jsonrpc": "2.0", "id": 5, "result": {}}) is False
    assert router.open == {}


def test_responses_go_to_their_request_stream_and_close_it() -> None:
    router = Router()
    router.opened("p1", req(1))
    router.opened("p2", req("a"))
    assert router.route({"jsonrpc": "2.0", "id": "a", "result": {}}) == "p2"
    assert router.route({"jsonrpc": "2.0", "id": 1.0, "error": {"code": 1, "message": "m"}}) == "p1"
    assert router.answered({"jsonrpc": "2.0", "id": 1, "result": {}}) == ["p1"]
    assert list(router.open) == ["p2"]


def test_progress_goes_to_the_stream_whose_request_carried_the_token() -> None:
    router = Router()
    router.opened("p1", req(1, token="t1"))
    router.opened("p2", req(2, token=7))
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 7, "progress": 1},
    }
    assert router.route(progress) == "p2"


def test_related_request_metadata_then_the_only_request_then_the_get_stream() -> None:
    router = Router()
    router.opened("p1", req(1))
    router.opened("p2", req(2))
    related = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "sampling/createMessage",
        "params": {"_meta": {"io.modelcontextprotocol/related-request-id": 1}},
    }
    assert router.route(related) == "p1"
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    assert router.route(log) is None  # two requests in flight and nothing says which: the GET stream
    router.answered({"jsonrpc": "2.0", "id": 2, "result": {}})
    assert router.route(log) == "p1"  # the only request in flight
    router.answered({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert router.route(log) is None


def test_a_batch_of_requests_keeps_its_stream_until_every_one_is_answered() -> None:
    router = Router()
    assert router.opened("p1", [req(1), req(2), {"jsonrpc": "2.0", "method": "n"}]) is True
    assert router.answered([{"jsonrpc": "2.0", "id": 1, "result": {}}]) == []
    assert router.answered({"jsonrpc": "2.0", "id": 2, "result": {}}) == ["p1"]


def test_a_cancelled_request_is_no_longer_in_flight() -> None:
    router = Router()
    router.opened("p1", [req(1), req(2)])
    router.opened("p2", req("b"))
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1.0, "reason": "x"},
    }
    assert router.cancelled(cancel) == []  # p1 still waits for request 2
    assert router.cancelled(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    ) == ["p1"]
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "later"}}
    assert router.route(log) == "p2"  # the only request still in flight
    assert router.cancelled({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}) == []
    assert router.cancelled(req(3)) == []
    assert router.cancelled(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "b"}}
    ) == ["p2"]
    assert router.route(log) is None  # the GET stream
