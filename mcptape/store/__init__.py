"""The recording database: open it, record into it through a batched writer, read it with SQL.

>>> store = open_store("/tmp/rec.db")          # created 0600, WAL, migrated to head
>>> writer = store.writer()
>>> sid = writer.create_session(mode="record", name="files")   # queued, never blocks
>>> writer.add_frame(sid, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s"))
>>> writer.close(); store.close()

Modules, one concern each: ``schema`` (tables), ``views`` (the SQL views), ``location``
(what ``--db`` means), ``sqlite_engine`` and ``server_engine`` (engines), ``engine``
(:class:`Store`), ``writer`` (batched inserts), ``correlation`` (pairing replies with
requests as they are written), ``rows`` (row shaping), ``queries`` (reading back),
``errors`` (:class:`StoreError` and friends).
"""

from __future__ import annotations

from mcptape.store.engine import Store, open_store
from mcptape.store.errors import StoreBusyError, StoreError, WriterClosedError
from mcptape.store.location import default_db_path, resolve_url
from mcptape.store.writer import Writer

__all__ = [
    "Store",
    "StoreBusyError",
    "StoreError",
    "Writer",
    "WriterClosedError",
    "default_db_path",
    "open_store",
    "resolve_url",
]
