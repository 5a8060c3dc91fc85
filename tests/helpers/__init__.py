"""Shared test helpers: test modules import from this package, never from each other."""
