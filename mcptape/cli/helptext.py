"""Help texts: `--help` is a summary a person reads at 80 columns, `--help-all` the whole.

Every mcptape command is a :class:`Command`. Its docstring's text before a form feed
(``\\f``, click's own cut) is the summary `--help` prints; what follows it (details,
worked scripts, edge cases) is printed by `--help-all` only. A command with many options
names the few its summary lists in full (``summary_options``): the others are named in
one paragraph, and `--help-all` explains each. `mcptape --help-all` prints the whole of
every command, for reading end to end or paging through.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Final

import click

HELP_ALL: Final = "mcptape.help_all"  # ctx.meta key: the whole help is being printed
WIDTH: Final = 80


def _show_all(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    ctx.meta[HELP_ALL] = True
    click.echo(ctx.get_help(), color=ctx.color)
    ctx.exit()


def help_all_option() -> click.Option:
    """``--help-all``: the command's whole help, every option in full."""
    return click.Option(
        ["--help-all"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_show_all,
        help="Show the whole help: the details after the summary, and every option in full.",
    )


class Command(click.Command):
    """A command whose `--help` is a summary and `--help-all` the whole (see the module docstring)."""

    def __init__(self, *args: Any, summary_options: Sequence[str] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", {}).setdefault("max_content_width", WIDTH)
        super().__init__(*args, **kwargs)
        # The long flags (--method) whose help the summary prints; None: every option's.
        self.summary_options = None if summary_options is None else frozenset(summary_options)
        self._help_all = help_all_option()

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        return [*params[:-1], self._help_all, params[-1]] if params else [self._help_all]

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not ctx.meta.get(HELP_ALL):
            super().format_help_text(ctx, formatter)
            return
        text = inspect.cleandoc(self.help or "").replace("\f", "")
        if text:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(text)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if ctx.meta.get(HELP_ALL) or self.summary_options is None:
            super().format_options(ctx, formatter)
            return
        shown, named = [], []
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):
                continue
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if set(param.opts) & self.summary_options or param is self._help_all or "--help" in param.opts:
                shown.append(record)
            else:
                named.append(max(param.opts, key=len))
        with formatter.section("Options"):
            formatter.write_dl(shown)
        if named:
            with formatter.section("More options (each explained by --help-all)"):
                width = (formatter.width or WIDTH) - formatter.current_indent
                for line in _joined(named, width):
                    formatter.write(f"{'':>{formatter.current_indent}}{line}\n")


def _joined(names: Sequence[str], width: int) -> list[str]:
    """``names`` joined by commas in lines of at most ``width`` characters, never split inside one."""
    lines: list[str] = []
    line = ""
    for name in names:
        piece = f"{name}, " if name != names[-1] else name
        if line and len(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    if line:
        lines.append(line.rstrip())
    return lines


def whole_help(group: click.Group, ctx: click.Context) -> str:
    """`mcptape --help-all`: the group's help, then each command's whole help."""
    parts = [group.get_help(ctx)]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        sub = click.Context(command, info_name=name, parent=ctx)
        sub.meta[HELP_ALL] = True
        parts.append("\n" + "=" * 78 + "\n" + command.get_help(sub))
    return "\n".join(parts)
