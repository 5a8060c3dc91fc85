"""A book of recorded answers: find the answer to a request by method and parameters, never by id.

Used both ways round: the replay player answers a live server's requests (sampling,
elicitation, roots) from the client's recorded answers; ``serve`` answers a live
client's requests from the server's recorded responses. Pure.

Identical requests are answered in recorded order: each entry is used once, and the
next identical one is taken; when all are used, the last one is given again (a client
that polls ``tools/list`` once more than it did when recorded still gets an answer).
Parameters are compared after normalisation (``_meta`` and minted ids out), as the
request's ``{"params": ...}`` so that ``--ignore 'tools/list=/params'`` and the pointers a
near miss names (``/params/arguments/city``) mean the same; absent, ``null`` and empty params
are the same request.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcptape.replay.matchers import NearMiss, nearest, request_body, request_key
from mcptape.replay.normalise import Normaliser
from mcptape.replay.tape import subject_of


@dataclass
class Entry:
    """A recorded request (``index`` numbers them from 1) and what answered it."""

    index: int
    method: str | None
    params: Any
    answer: Any
    used: int = 0


class AnswerBook:
    """Recorded requests and their answers, taken by method and normalised params."""

    def __init__(self, entries: Iterable[Entry], normaliser: Normaliser | None = None) -> None:
        self.normaliser = normaliser or Normaliser()
        self.entries = list(entries)
        self._by_key: dict[bytes, list[Entry]] = defaultdict(list)
        self._by_method: dict[str | None, list[Entry]] = defaultdict(list)
        for entry in self.entries:
            self._by_key[self._key(entry.method, entry.params)].append(entry)
            self._by_method[entry.method].append(entry)

    def _body(self, method: str | None, params: Any) -> dict[str, Any]:
        tool = subject_of(method, params)
        request = {} if params is None else {"params": params}
        return request_body(self.normaliser.normalise(request, method, tool))

    def _key(self, method: str | None, params: Any) -> bytes:
        return request_key(method, self._body(method, params))

    @staticmethod
    def _next(entries: list[Entry]) -> Entry | None:
        if not entries:
            return None
        entry = next((e for e in entries if e.used == 0), entries[-1])
        entry.used += 1
        return entry

    def take(self, method: str | None, params: Any) -> Entry | None:
        """The next recorded answer to an identical request, or None."""
        return self._next(self._by_key.get(self._key(method, params), []))

    def take_by_method(self, method: str | None) -> Entry | None:
        """The next recorded answer to any request of ``method`` (when params changed), or None."""
        return self._next(self._by_method.get(method, []))

    def near(self, method: str | None, params: Any, k: int = 3) -> list[NearMiss]:
        """The ``k`` recorded requests nearest to one that matched nothing."""
        return nearest(
            method,
            self._body(method, params),
            ((e.index, e.method, self._body(e.method, e.params)) for e in self.entries),
            k,
        )

    def unused(self) -> list[Entry]:
        """Recorded requests nobody asked for (``serve --strict``)."""
        return [e for e in self.entries if e.used == 0]
