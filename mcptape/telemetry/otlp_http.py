"""OTLP/HTTP with protobuf bodies: POSTs to a receiver's ``/v1/traces`` and ``/v1/metrics``, retried within a bound.

The standard library's :mod:`http.client`, one kept-alive connection per endpoint, on
the exporter's thread (the socket waits release the interpreter). An export is tried
for at most ``timeout`` seconds in all: a receiver that answers 429, 502, 503 or 504,
or a connection that fails, is tried again after a backoff (1 s, 2 s, 4 s..., jittered,
or the receiver's ``Retry-After``) while the time allows, at most :data:`ATTEMPTS`
times; anything else is a failure said in :attr:`OtlpHttp.failure`, never raised.

What every OTLP exporter takes from the environment is taken here too:
``OTEL_EXPORTER_OTLP_HEADERS`` (an API key for a hosted backend), ``…_COMPRESSION``
(``gzip``), ``…_CERTIFICATE``, ``…_CLIENT_CERTIFICATE`` and ``…_CLIENT_KEY``, each
also per signal (``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` wins over the general one).
"""

from __future__ import annotations

import gzip
import http.client
import os
import random
import ssl
import time
import zlib
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote, urlsplit

ATTEMPTS: Final = 4
RETRYABLE: Final = frozenset({429, 502, 503, 504})
MAX_ANSWER: Final = 1 << 20  # bytes of an answer read; a longer one closes the connection
JITTER: Final = 0.2


def endpoints(url: str) -> tuple[str, str]:
    """The traces and metrics endpoints of an OTLP/HTTP receiver given as its base URL
    (``http://localhost:4318``) or as its traces endpoint (``…/v1/traces``)."""
    base = url.rstrip("/")
    for suffix in ("/v1/traces", "/v1/metrics"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return f"{base}/v1/traces", f"{base}/v1/metrics"


def _setting(environ: Mapping[str, str], signal: str, name: str) -> str | None:
    return environ.get(f"OTEL_EXPORTER_OTLP_{signal}_{name}") or environ.get(f"OTEL_EXPORTER_OTLP_{name}")


def env_headers(value: str | None) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_HEADERS``: ``key=value`` pairs, comma-separated, percent-decoded."""
    out: dict[str, str] = {}
    for item in (value or "").split(","):
        key, sep, val = item.partition("=")
        key, val = unquote(key.strip()), unquote(val.strip())
        if sep and key and "\n" not in key + val and "\r" not in key + val:
            out[key] = val
    return out


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: our own backoff instead
    return seconds if 0 <= seconds < 3600 else None


class Endpoint:
    """One signal's endpoint: a kept-alive connection and what each POST carries."""

    def __init__(self, url: str, signal: str, timeout: float, environ: Mapping[str, str]) -> None:
        parts = urlsplit(url)
        self.url = url
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (443 if self.https else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.timeout = timeout
        self.compression = (_setting(environ, signal, "COMPRESSION") or "none").strip().lower()
        from mcptape import __version__

        self.headers = {
            "Content-Type": "application/x-protobuf",
            "User-Agent": f"mcptape/{__version__}",
            **env_headers(_setting(environ, signal, "HEADERS")),
        }
        if self.compression in ("gzip", "deflate"):
            self.headers["Content-Encoding"] = self.compression
        self._tls: ssl.SSLContext | None = None
        self.broken: str | None = None  # why no POST can be made (a certificate that cannot be read)
        if self.https:
            try:
                self._tls = ssl.create_default_context(cafile=_setting(environ, signal, "CERTIFICATE"))
                cert = _setting(environ, signal, "CLIENT_CERTIFICATE")
                if cert:
                    self._tls.load_cert_chain(cert, _setting(environ, signal, "CLIENT_KEY"))
            except (OSError, ValueError) as exc:
                self.broken = f"the TLS settings of OTEL_EXPORTER_OTLP_*: {type(exc).__name__}: {exc}"
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._tls is not None:
                self._conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=timeout, context=self._tls
                )
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        elif self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)
        self._conn.timeout = timeout
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _once(self, body: bytes, timeout: float) -> tuple[int, str | None]:
        """One POST: the status and the Retry-After header (the connection kept when it can be)."""
        conn = self._connection(timeout)
        try:
            conn.request("POST", self.path, body, self.headers)
            answer = conn.getresponse()
            length = answer.getheader("Content-Length")
            if length is not None and length.isdigit() and int(length) <= MAX_ANSWER:
                answer.read()
            else:
                self.close()  # an answer too long (or of unknown length) is not worth reading
            if answer.will_close:
                self.close()
            return answer.status, answer.getheader("Retry-After")
        except BaseException:
            self.close()
            raise

    def post(self, body: bytes) -> str | None:
        """POST the body (retried within the timeout); None when accepted, else why not."""
        if self.broken is not None:
            return self.broken
        if self.compression == "gzip":
            body = gzip.compress(body, compresslevel=5)
        elif self.compression == "deflate":
            body = zlib.compress(body)
        deadline = time.monotonic() + self.timeout
        why = "no attempt"
        for attempt in range(ATTEMPTS):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            wait: float | None = None
            try:
                status, retry_after = self._once(body, remaining)
            except (OSError, http.client.HTTPException) as exc:
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                if isinstance(exc, TimeoutError):
                    return f"no answer within {self.timeout:g} s"
                if isinstance(exc, ssl.SSLError):
                    return why  # a certificate refused now is refused again
                wait = 0.0 if attempt == 0 else None  # a kept-alive connection the receiver closed: at once
            else:
                if 200 <= status < 300:
                    return None
                why = f"HTTP {status}"
                if status not in RETRYABLE:
                    return why
                wait = _retry_after(retry_after)
            if wait is None:
                wait = 2.0**attempt * random.uniform(1 - JITTER, 1 + JITTER)
            if attempt + 1 == ATTEMPTS or time.monotonic() + wait >= deadline:
                break
            time.sleep(wait)
        return why


class OtlpHttp:
    """An OTLP/HTTP receiver: export requests serialized and POSTed (see the module docstring)."""

    def __init__(self, url: str, timeout: float = 5.0, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.where = url
        traces, metrics = endpoints(url)
        self._traces = Endpoint(traces, "TRACES", timeout, env)
        self._metrics = Endpoint(metrics, "METRICS", timeout, env)
        self.failure: str | None = None

    def _post(self, endpoint: Endpoint, message: Any) -> bool:
        why = endpoint.post(message.SerializeToString())
        if why is not None:
            self.failure = f"{why} (POST {endpoint.path})"
        return why is None

    def spans(self, request: Any) -> bool:
        return self._post(self._traces, request)

    def metrics(self, request: Any) -> bool:
        return self._post(self._metrics, request)

    def close(self) -> None:
        self._traces.close()
        self._metrics.close()
