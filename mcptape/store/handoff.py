"""Handing a large frame's bytes to SQLite so that they are freed before SQLite builds its row.

SQLite copies a bound value, then builds the row from that copy: with the frame's own
bytes still alive, a 64 MiB frame is in memory three times. A frame that the writer
holds alone (forwarded, dropped by the relay) can give its bytes up: they go into a
:class:`Handoff`, which sqlite3 adapts while binding and lets go of right after, so
the bytes are freed before the row is built.

Whether the writer holds a frame alone is read from reference counts: :func:`probe`
counts them, and :data:`ALONE` is what it counts for a frame nobody else holds,
measured once through the same shape of calls as the writer's.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import Final

from mcptape.wire.frame import Frame

__all__ = ["ALONE", "Handoff", "probe"]


class Handoff:
    """A large frame's bytes in a row, given to the database once and then let go."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data: bytes | None = data


def _hand_over(handoff: Handoff) -> bytes:
    data = handoff.data
    if data is None:  # a retry after the bytes were bound once: they are gone
        raise ValueError("a large frame's bytes were already handed to the database and released")
    handoff.data = None
    return data


# sqlite3 calls this while binding and drops what it returns right after SQLite copied it.
sqlite3.register_adapter(Handoff, _hand_over)


def probe(frame: Frame) -> tuple[int, int]:
    """The references to ``frame`` and to its bytes, as counted from :meth:`Writer._sole_owner`."""
    return sys.getrefcount(frame), sys.getrefcount(frame.data)


class _Calibration:
    def _sole_owner(self, frame: Frame) -> tuple[int, int]:
        return probe(frame)


def _calibrate() -> tuple[int, int]:
    """What :func:`probe` counts for a frame the writer holds alone.

    Measured through the same shape of calls as the writer's (a local, a method's
    argument, the probe's), not assumed: how many references an interpreter counts
    for those differs between Python versions.
    """
    frame = Frame(bytes(bytearray(8)), "c2s")
    return _Calibration()._sole_owner(frame)


ALONE: Final = _calibrate()
