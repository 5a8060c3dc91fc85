"""The injection options every command that talks to a server shares (record, proxy, call).

``@rule_options`` adds ``--handle-sampling``, ``--handle-elicitation``, ``--roots`` and
``--inject``; :func:`rules_from_cli` turns their values into :class:`mcptape.rules.rules.Rules`
or a one-line usage error. ``@fault_options`` adds ``--fault`` and ``--faults`` (record,
proxy); :func:`faults_from_cli` turns them into :class:`mcptape.rules.faults.FaultSet`.
Only click is imported here, so ``--help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mcptape.cli.common import UserError

if TYPE_CHECKING:
    from mcptape.rules.faults import FaultSet
    from mcptape.rules.rules import Rules

F = TypeVar("F", bound=Callable[..., Any])


def rule_options(func: F) -> F:
    """Add the injection options; the command receives handle_sampling, handle_elicitation, roots, inject."""
    options = [
        click.option(
            "--handle-sampling",
            metavar="JSON|auto|reject",
            default=None,
            help="Answer the server's sampling/createMessage requests instead of the client: a "
            'result template (e.g. \'{"role": "assistant", "content": {"type": "text", "text": "hi"}, '
            '"model": "canned"}\'), auto (a minimal valid answer) or reject (an error).',
        ),
        click.option(
            "--handle-elicitation",
            metavar="JSON|auto|decline|cancel",
            default=None,
            help="Answer the server's elicitation/create requests instead of the client: a result "
            'template (e.g. \'{"action": "accept", "content": {"name": "Ada"}}\'), auto (accept with '
            "each field's default or simplest value), decline or cancel.",
        ),
        click.option(
            "--roots",
            "roots",
            multiple=True,
            metavar="URI[=NAME]",
            help="Answer the server's roots/list requests with these roots (repeatable; an "
            "absolute path becomes a file:// URI).",
        ),
        click.option(
            "--inject",
            "inject",
            metavar="FILE",
            default=None,
            help="A JSON rules file: rules matching server requests by method, tool name, "
            "substring or regex, answering with a result, an error or pass (to the client). "
            "Tried before the other --handle-* options.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def rules_from_cli(
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: Sequence[str],
    inject: str | None,
) -> Rules:
    """The rules the options describe; a UserError (exit 2, one line) when one is unusable."""
    from mcptape.rules.rules import RuleError, Rules

    try:
        return Rules.from_options(
            handle_sampling=handle_sampling,
            handle_elicitation=handle_elicitation,
            roots=tuple(roots),
            inject_file=inject,
        )
    except RuleError as exc:
        raise UserError(str(exc)) from None


def declare_option(func: F) -> F:
    """Add ``--declare-capabilities`` (the command receives ``declare_capabilities``)."""
    return click.option(
        "--declare-capabilities",
        "declare_capabilities",
        is_flag=True,
        default=False,
        help="When the client did not declare a capability the injection rules serve (sampling, "
        "elicitation, roots), declare it in the handshake forwarded to the server, so the server "
        "asks; the edit is recorded as a proxy edit next to the client's frame.",
    )(func)


def fault_options(func: F) -> F:
    """Add the fault injection options; the command receives ``fault`` (a tuple) and ``faults_file``."""
    options = [
        click.option(
            "--fault",
            "fault",
            multiple=True,
            metavar="METHOD[:TOOL]=ACTION[,p=PROB][,seed=N]",
            help="Disturb matching frames on purpose (repeatable). ACTION: delay:MS, drop, duplicate, "
            "error:CODE, timeout (held, never answered: the client's own timeout fires), cut (the "
            "client's connection: stdio pipe, or the HTTP stream), malformed, reorder. A request "
            "method's response is touched (on=request: the request itself; error and timeout act "
            "on the request). p: the chance per matching frame, drawn from seed (repeatable runs). "
            "E.g. 'tools/call:search=delay:2000,p=0.5,seed=7', 'notifications/progress=reorder'. "
            "Each fault is recorded as an event beside the frame.",
        ),
        click.option(
            "--faults",
            "faults_file",
            metavar="FILE",
            default=None,
            help='A JSON faults file: {"faults": [{"method", "tool", "action", "p", "seed", "on"}, '
            "or 'METHOD=ACTION' strings]}; tried before the --fault flags.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def faults_from_cli(flags: Sequence[str], path: str | None) -> FaultSet | None:
    """The fault rules the options give (None without any); a UserError (exit 2, one line) when one is unusable."""
    if not flags and path is None:
        return None
    from mcptape.rules.faults import FaultError, from_options

    try:
        return from_options(flags, path) or None
    except FaultError as exc:
        raise UserError(str(exc)) from None
