"""W3C Trace Context read from a request's ``params._meta``: the parent a span continues.

A request carrying ``traceparent`` (and ``tracestate``) in ``params._meta`` names the
caller's span (the MCP conventions' context propagation). mcptape forwards the request
unchanged, so the server continues the same parent, and the client's span, mcptape's
and the server's are one trace.

The rules are those of W3C Trace Context level 1 as OpenTelemetry's own propagator
applies them: a ``traceparent`` of another shape, an all-zero trace or parent id,
version ``ff``, or version ``00`` with more fields is no parent at all (the span starts
a trace of its own); a ``tracestate`` with one malformed or repeated member, more than
32 members, or over 8192 characters is dropped whole, the parent kept. Pure functions:
whatever a peer wrote, nothing here raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_TRACEPARENT: Final = re.compile(
    r"[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:(-.*)|[ \t]*)", re.DOTALL
)
_MAX_TRACEPARENT: Final = 512
_KEY: Final = r"[a-z][_0-9a-z\-\*\/]{0,255}|[a-z0-9][_0-9a-z\-\*\/]{0,240}@[a-z][_0-9a-z\-\*\/]{0,13}"
_VALUE: Final = r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]"
_MEMBER: Final = re.compile(f"({_KEY})=({_VALUE})")
_MAX_TRACESTATE: Final = 8192
_MAX_MEMBERS: Final = 32
SAMPLED: Final = 0x01


@dataclass(frozen=True, slots=True)
class Parent:
    """The caller's span: ids as the 16 and 8 bytes OTLP carries, its flags, its tracestate."""

    trace_id: bytes
    span_id: bytes
    flags: int
    tracestate: str = ""

    @property
    def sampled(self) -> bool:
        """Whether the caller records this trace (its spans are wanted)."""
        return bool(self.flags & SAMPLED)


def tracestate(header: str) -> str:
    """The ``tracestate`` kept: its valid members joined again, or ``""`` when any is invalid."""
    if len(header) > _MAX_TRACESTATE:
        return ""
    members: dict[str, str] = {}
    for member in header.split(","):
        member = member.strip(" \t")
        if not member:
            continue
        match = _MEMBER.fullmatch(member)
        if match is None:
            return ""
        key, value = match.groups()
        if key in members:
            return ""
        members[key] = value
    if len(members) > _MAX_MEMBERS:
        return ""
    return ",".join(f"{key}={value}" for key, value in members.items())


def parent(traceparent: str | None, state: str | None = None) -> Parent | None:
    """The parent a ``traceparent`` names; None when there is none (a trace of its own)."""
    if not traceparent or len(traceparent) > _MAX_TRACEPARENT:
        return None
    match = _TRACEPARENT.fullmatch(traceparent)
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if trace_id == "0" * 32 or span_id == "0" * 16 or version == "ff" or (version == "00" and rest):
        return None
    return Parent(
        bytes.fromhex(trace_id),
        bytes.fromhex(span_id),
        int(flags, 16),
        tracestate(state) if state else "",
    )
