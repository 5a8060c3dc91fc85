"""The relay and its pieces: links (transports), the relay itself, and addons such as the recorder.

Every mode is a client-facing link, a :class:`Relay` and a server-facing link
(shared/DESIGN.md). The public surface is below; modules are imported lazily so that
``import mcptape.proxy`` stays cheap for commands that only need one piece.

- :mod:`.link`: the :class:`Link` contract, :class:`LinkEnd`, :class:`LinkClosed`,
  :func:`wait_from_thread`, :func:`memory_pair` for in-process tests.
- :mod:`.relay`: :class:`Relay` (``deliver``, ``send``, ``request``, ``run``, ``stop``).
- :mod:`.flow`, :mod:`.hooks`, :mod:`.addons`: :class:`Flow`, the hook specs, the
  :class:`AddonManager`, :class:`SessionContext` and :class:`Outcome`.
- :mod:`.recorder`, :mod:`.recording`: the :class:`Recorder` addon and the
  :class:`BackgroundStore` that opens the database while frames already flow.
- :mod:`.stdio`, :mod:`.process`: links over our own stdio and a spawned server.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Link": "link",
    "LinkEnd": "link",
    "LinkClosed": "link",
    "MemoryLink": "links.memory",
    "memory_pair": "links.memory",
    "wait_from_thread": "link",
    "Relay": "relay",
    "Flow": "flow",
    "AddonManager": "addonmanager",
    "AddonError": "addonmanager",
    "SessionContext": "addonmanager",
    "Outcome": "addonmanager",
    "Recorder": "addons.recorder",
    "BackgroundStore": "addons.recording",
    "SessionRow": "addons.recording",
    "FdLink": "links.stdio",
    "open_stdio_link": "links.stdio",
    "ProcessLink": "links.process",
    "SpawnError": "links.process",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcptape.proxy' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mcptape.proxy.{module}"), name)
