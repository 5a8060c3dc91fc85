"""View SQL of released revisions, one module per revision that changed views, never edited.

``versions/`` holds only Alembic revision files (Alembic loads every module there), so
the SQL a revision runs lives here, beside it in spirit: ``views_0001`` for revision
0001, ``views_0002`` for 0002, ``views_0003`` for 0003. tests/test_migrations_frozen.py
pins each file's hash.
"""
