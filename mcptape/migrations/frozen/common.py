"""Shared by the frozen view sets: a view as data, and the statements that create and drop a set.

Frozen: released revisions run this code, so it must not change
(tests/test_migrations_frozen.py pins its hash). A change goes into a new module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class View:
    """One view: its name and the SELECT that defines it on each database."""

    name: str
    sqlite: str
    postgresql: str

    def select_for(self, dialect: str) -> str:
        """The SELECT for a SQLAlchemy dialect name (``sqlite`` or ``postgresql``)."""
        if dialect == "sqlite":
            return self.sqlite
        if dialect == "postgresql":
            return self.postgresql
        raise ValueError(
            f"no view definitions for the {dialect!r} database; mcptape supports sqlite and postgresql"
        )


def create(views: tuple[View, ...], dialect: str, pg_functions: tuple[str, ...]) -> list[str]:
    """Statements creating ``views`` in order, after the PostgreSQL helper functions they call."""
    statements = [function.strip() for function in pg_functions] if dialect == "postgresql" else []
    statements += [f"CREATE VIEW {view.name} AS {view.select_for(dialect).strip()}" for view in views]
    return statements


def drop(names_dependants_first: tuple[str, ...], dialect: str, pg_functions: tuple[str, ...]) -> list[str]:
    """Statements dropping the views named (if they exist), then the PostgreSQL functions (by signature)."""
    statements = [f"DROP VIEW IF EXISTS {name}" for name in names_dependants_first]
    if dialect == "postgresql":
        statements += [f"DROP FUNCTION IF EXISTS {signature}" for signature in pg_functions]
    return statements
