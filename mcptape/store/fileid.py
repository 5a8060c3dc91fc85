"""Whether a SQLite recording file is still the one a writer opened.

A recorder keeps its database open for as long as the session lasts. Deleted
(``rm mcptape.db`` to start afresh), moved or replaced (``mv other.db mcptape.db``) under it,
SQLite goes on writing into the file it opened, which no path reaches any more: every
frame from then on would be lost without a word, and a later connection could even
write the old file's pages into the new one (its ``-wal`` is still beside it). The
writer asks :meth:`FileIdentity.gone` before each transaction and stops recording,
saying why, as soon as the path no longer leads to its file; once the store is closed,
:meth:`FileIdentity.drop_companions` removes the ``-wal`` and ``-shm`` it left beside a
file that is not its own.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Final

CHECK_EVERY_S: Final = 0.25  # one stat() per this much time at most: nothing on the hot path


class FileIdentity:
    """The device and inode ``path`` had when the writer opened it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        stat = os.stat(path)
        self._identity = (stat.st_dev, stat.st_ino)
        self._checked = time.monotonic()
        self.went = False  # gone() found the path leading elsewhere
        # The -wal and -shm SQLite opened beside the file: once it is gone, they are ours
        # alone, and SQLite would merge that -wal into whatever file next takes the path.
        self._companions: dict[Path, tuple[int, int]] = {}
        for suffix in ("-wal", "-shm"):
            companion = Path(f"{path}{suffix}")
            try:
                found = os.stat(companion)
            except OSError:
                continue
            self._companions[companion] = (found.st_dev, found.st_ino)

    def gone(self, *, now: bool = False) -> str | None:
        """Why the path no longer leads to the file opened (deleted, replaced), or None.

        Looks at most every :data:`CHECK_EVERY_S` (None in between), unless ``now``.
        """
        at = time.monotonic()
        if not now and at - self._checked < CHECK_EVERY_S:
            return None
        self._checked = at
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self.went = True
            return f"{self.path} was deleted or moved away while recording"
        except OSError:  # unreadable for a moment (a network file system): not a reason to stop
            return None
        if (stat.st_dev, stat.st_ino) != self._identity:
            self.went = True
            return f"{self.path} was replaced by another file while recording"
        return None

    def drop_companions(self) -> list[Path]:
        """Remove the ``-wal`` and ``-shm`` beside the path that are still the ones opened with
        the file (after :meth:`gone` said it went, with every connection closed); those removed."""
        removed = []
        for companion, identity in self._companions.items():
            try:
                found = os.stat(companion)
                if (found.st_dev, found.st_ino) == identity:
                    os.unlink(companion)
                    removed.append(companion)
            except OSError:
                continue
        return removed
