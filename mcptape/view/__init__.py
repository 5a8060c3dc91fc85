"""Looking at recordings as they happen: the feed `tail` and the viewer read, and the web viewer.

- :mod:`mcptape.view.cursor`: which frame ids a poll still has to read (gaps included);
- :mod:`mcptape.view.feed`: frames rows turned into exchanges as they complete (pure);
- :mod:`mcptape.view.reader`: the poller over the store (SQLite or PostgreSQL) that feeds both;
- :mod:`mcptape.view.app`: the `mcptape ui` web server, its routes and its protection;
  the pages' data come from :mod:`mcptape.view.api`, :mod:`mcptape.view.timeline`,
  :mod:`mcptape.view.detail`, :mod:`mcptape.view.compare` and :mod:`mcptape.view.sqlpage`.
"""
