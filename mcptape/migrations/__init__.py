"""Alembic migrations of the recording database, shipped in the wheel and applied by ``open_store``.

``runner`` applies them (with a lock, so processes opening a new database at once do
not race); ``env.py`` is Alembic's environment; ``versions/`` holds one file per
revision. Revisions are named ``0001``, ``0002``, ... and never edited once released.
"""
