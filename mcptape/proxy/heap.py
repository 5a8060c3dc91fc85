"""The cyclic garbage collector in a process that relays frames (`record`, the gateway).

Every frame allocates a few container objects (the frame, its flow, its classification,
the writer's queue item) that live until the writer has stored them, 20–100 ms later.
With CPython's default thresholds (700, 10, 10) the collector ran a young collection
every hundred frames or so, promoted the frames still queued, and every few thousand
frames walked the whole heap: the ~70,000 objects of SQLAlchemy, click and mcptape
itself, for 20–90 ms with the GIL held, while no frame moved. Measured with
`mcptape record` in front of server-everything, pipelined: about a third of the
process's CPU per frame went to the collector.

:func:`settle_heap` sets what exists once the process is up (its imports, the open
store) aside from the collector (:func:`gc.freeze`: never walked again, never freed;
nothing there is garbage to be), and lets young objects gather longer before a
collection: fewer collections, fewer frames promoted to be walked again. Nothing
changes for memory that is not cyclic garbage (freed at once by reference counting);
cyclic garbage waits a little longer. Only processes mcptape runs itself call it, never
library code in someone else's process (the pytest plugin).
"""

from __future__ import annotations

import gc
from typing import Final

# Young objects allocated before a collection (CPython's default: 700), and how many
# collections of a generation before the next is collected (default: 10).
THRESHOLDS: Final = (10_000, 20, 20)


def settle_heap() -> None:
    """Freeze what the process holds now and collect less often. Call once started up; again is harmless."""
    gc.set_threshold(*THRESHOLDS)
    gc.freeze()
