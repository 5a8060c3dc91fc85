"""Alembic revisions, one per file (this file only makes the folder a package for the wheel)."""
