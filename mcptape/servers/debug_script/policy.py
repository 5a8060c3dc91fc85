"""Which programs a debug-script server may launch.

The tool runs the command its caller names, and the server is registered as an
upstream that a gateway may serve to remote clients: by default it starts only
Node.js itself (``node`` or ``nodejs``, by name or as a path ending in one of
them). TypeScript loaders that run inside Node work through Node's own flags
(``node --import tsx src/app.ts``). Anything else (``npx``, ``tsx``, ``npm run``,
a shell) needs the server to be started with ``--allow-command PROGRAM`` or
``--allow-any-command``.

Pure: argv in, a :class:`DebugScriptError` out when it is refused.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Final

from mcptape.servers.debug_script.errors import DebugScriptError

NODE_NAMES: Final = frozenset({"node", "nodejs"})


def is_node(program: str) -> bool:
    """Whether ``program`` (argv[0]) is Node.js by name: ``node``, ``nodejs`` or a path ending in one."""
    return os.path.basename(program) in NODE_NAMES


@dataclass(frozen=True)
class CommandPolicy:
    """Programs allowed besides Node.js: by name (any path ending in it) or by exact path."""

    allowed: frozenset[str] = frozenset()
    allow_any: bool = False

    def check(self, argv: list[str]) -> None:
        """Raise DebugScriptError unless this server may start ``argv``."""
        program = argv[0]
        if self.allow_any or is_node(program) or self._allowed(program):
            return
        raise DebugScriptError(
            f"Refusing to run {shlex.quote(program)}: this debug-script server only launches Node.js "
            "(node or nodejs), e.g. node --inspect-brk=0 ./test.js; TypeScript works with "
            "node --inspect-brk=0 --import tsx src/app.ts. To launch other programs, start the server with "
            f"--allow-command {shlex.quote(os.path.basename(program))} or --allow-any-command."
        )

    def _allowed(self, program: str) -> bool:
        for entry in self.allowed:
            if "/" in entry:
                if os.path.abspath(program) == os.path.abspath(entry):
                    return True
            elif os.path.basename(program) == entry:
                return True
        return False
