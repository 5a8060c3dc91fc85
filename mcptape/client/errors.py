"""The client's errors: one tree, one category each, one exit status each.

Every error the client core raises derives from :class:`ClientError`, itself a
:class:`McptapeError`. Each class carries the ``category`` that ``call --structured``
prints and the exit status ``mcptape call`` ends with::

    McptapeError
     └── ClientError
          ├── TransportError            transport    exit 1
          │    ├── ConnectError           the server could not be started or reached
          │    ├── ConnectionLost         the server went away before answering
          │    └── HttpError              an HTTP error status instead of a JSON-RPC answer
          ├── CapabilityError           capability   exit 1   the server did not advertise it
          ├── ProtocolError             protocol     exit 1   a reply that is not MCP, a failed handshake
          │    └── ServerProtocolError    protocol     exit 2   JSON-RPC error -32700..-32600 from the server
          ├── ApplicationError          application  exit 2
          │    ├── ServerApplicationError            JSON-RPC error with any other code
          │    └── ToolError                exit 0, or 2 with --fail-on-error: a result with isError
          ├── ValidationError           validation   exit 1   bad arguments, a bad script, an output schema
          └── ClientTimeout             timeout      exit 124
               ├── ConnectTimeout         the handshake did not finish in time
               └── RequestTimeout         no reply (nor progress) in time

A JSON-RPC error the server answered is built with :func:`server_error`, which picks
the protocol or application branch from its code; both keep ``code``, ``message`` and
``data`` as the server sent them.
"""

from __future__ import annotations

from typing import Any, ClassVar


class McptapeError(Exception):
    """The base of every error mcptape raises on purpose."""


class ClientError(McptapeError):
    """An MCP operation failed; ``category`` and ``exit_code`` say how ``call`` reports it."""

    category: ClassVar[str] = "protocol"
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data

    def as_dict(self) -> dict[str, Any]:
        """The ``error`` object of a structured envelope."""
        return {"category": self.category, "code": self.code, "message": self.message, "data": self.data}


class TransportError(ClientError):
    """The connection to the server failed."""

    category = "transport"


class ConnectError(TransportError):
    """The server could not be started or reached (after the retries)."""


class ConnectionLost(TransportError):
    """The server went away (exited, closed the connection) before answering."""


class HttpError(TransportError):
    """A remote server answered a request with an HTTP error status (``data["status"]``), no JSON-RPC."""

    @property
    def status(self) -> int | None:
        status = self.data.get("status") if isinstance(self.data, dict) else None
        return status if isinstance(status, int) else None


class CapabilityError(ClientError):
    """The server did not advertise the capability a method needs; nothing was sent."""

    category = "capability"


class ProtocolError(ClientError):
    """The server's reply is not what MCP says (or the handshake failed)."""

    category = "protocol"


class ServerProtocolError(ProtocolError):
    """The server answered with a JSON-RPC protocol error (parse, invalid request, method, params)."""

    exit_code = 2


class ApplicationError(ClientError):
    """The server understood the request and reported a failure."""

    category = "application"
    exit_code = 2


class ServerApplicationError(ApplicationError):
    """The server answered with a JSON-RPC error outside the protocol range."""


class ToolError(ApplicationError):
    """A tool answered with ``isError: true``; the message is the tool's text."""

    exit_code = 0

    def __init__(self, message: str, *, result: Any = None, fail: bool = False) -> None:
        super().__init__(message)
        self.result = result
        self.fail = fail

    @property
    def status(self) -> int:
        """0, or 2 under ``--fail-on-error``."""
        return 2 if self.fail else 0


class ValidationError(ClientError):
    """Input that cannot be sent (bad arguments, a bad script) or output that breaks its schema."""

    category = "validation"


class ClientTimeout(ClientError):
    """Something took longer than allowed."""

    category = "timeout"
    exit_code = 124


class ConnectTimeout(ClientTimeout):
    """The server did not finish the handshake in time."""


class RequestTimeout(ClientTimeout):
    """No reply (and no progress notification) came in time."""


PROTOCOL_CODES = range(-32700, -32599)  # -32700..-32600: parse, invalid request, method, params


def server_error(error: Any) -> ClientError:
    """The error for a JSON-RPC ``error`` object a server answered with."""
    if not isinstance(error, dict):
        return ProtocolError(f"the server answered with a malformed error object: {error!r}")
    code = error.get("code")
    message = error.get("message")
    text = message if isinstance(message, str) else repr(message)
    cls: type[ClientError] = (
        ServerProtocolError if isinstance(code, int) and code in PROTOCOL_CODES else ServerApplicationError
    )
    return cls(text, code=code if isinstance(code, int) else None, data=error.get("data"))


def exit_status(error: ClientError | None) -> int:
    """The exit status ``mcptape call`` ends with for an operation that ended with ``error``."""
    if error is None:
        return 0
    if isinstance(error, ToolError):
        return error.status
    return error.exit_code
