"""The recording database: open it, record into it through a batched writer, read it with SQL.

>>> store = open_store("/tmp/rec.db")          # created 0600, WAL, migrated to head
>>> sid = store.create_session(mode="record", name="files")
>>> writer = store.writer()
>>> writer.add_frame(sid, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s"))
>>> writer.close(); store.close()

Tables are described in ``schema``, the SQL views in ``views``; ``engine`` opens
databases and ``writer`` batches inserts.
"""

from __future__ import annotations

from mcptape.store.engine import Store, StoreError, default_db_path, open_store, resolve_url
from mcptape.store.writer import Writer

__all__ = ["Store", "StoreError", "Writer", "default_db_path", "open_store", "resolve_url"]
