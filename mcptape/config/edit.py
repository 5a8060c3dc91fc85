"""Editing mcpServers entries in a config file's text, changing only the bytes that must.

`mcptape wrap` and `unwrap` never re-render a file: each change is a splice into the
text the user wrote, with separators copied from the entry itself, so a BOM, CRLF line
endings, escapes such as ``\\u00e9``, empty ``"args": []``, duplicate names and every
untouched entry keep their bytes. Wrapping inserts the recorder's arguments in front of
the original ones and moves the original command's exact text among them; unwrapping
cuts them out again, so wrap followed by unwrap gives back the original bytes.

Pure functions on text that a JSON parser has already accepted (:mod:`mcptape.wire.jsontext`).
"""

from __future__ import annotations

import json
import re
from typing import Final

from mcptape.wire.jsontext import COMMENT, Member, element_spans, object_members, skip_value

# The members a remote entry uses to say where and how to reach its server.
REMOTE_KEYS: Final = ("url", "serverUrl", "type", "transport", "headers")

Edit = tuple[int, int, str]

# A separator copied from JSON with comments must not copy its comments: a new member
# would repeat the note written for its neighbour.
_SEPARATOR_COMMENT: Final = re.compile(r"[ \t]*(?:" + COMMENT + r")")
_EMPTY_LINE: Final = re.compile(r"\n[ \t]*(?=\n)")


def _bare(separator: str) -> str:
    """``separator`` without comments (and without the lines they leave empty)."""
    if "/" not in separator:
        return separator
    return _EMPTY_LINE.sub("", _SEPARATOR_COMMENT.sub("", separator))


class EditError(Exception):
    """The file's text cannot be edited in place; the message is one line."""


def json_string(value: str) -> str:
    """A JSON string literal, non-ASCII kept as it is (as people write config files)."""
    return json.dumps(value, ensure_ascii=False)


def server_entries(text: str) -> dict[str, tuple[int, int]]:
    """Where each mcpServers entry's value lies in ``text`` (the last of duplicate names
    wins, as it does for parsers)."""
    top = object_members(text) or []
    # The key a parser reads the entries from (mcptape.config.registry.SERVER_KEYS, in order).
    servers = _last(top, "mcpServers") or _last(top, "servers")
    entries = object_members(text, servers.value_start) if servers else None
    if entries is None:
        raise EditError('no "mcpServers" (or "servers") object found in the text')
    return {m.key: (m.value_start, m.value_end) for m in entries}


def _last(members: list[Member], key: str) -> Member | None:
    found = None
    for member in members:
        if member.key == key:
            found = member
    return found


def _members(entry: str) -> list[Member]:
    members = object_members(entry)
    if members is None:
        raise EditError("the entry is not an object")
    return members


def _member_separator(entry: str, members: list[Member]) -> str:
    """What separates two members in this entry (``", "`` or ``",\\n      "``)."""
    if len(members) >= 2:
        return _bare(entry[members[0].value_end : members[1].key_start])
    if members:
        lead = _bare(entry[entry.index("{") + 1 : members[0].key_start])
        if "\n" in lead:
            return "," + lead
    return ", "


def _colon(entry: str, member: Member) -> str:
    return _bare(entry[skip_value(entry, member.key_start) : member.value_start])


def _element_separator(entry: str, start: int, elements: list[tuple[int, int]]) -> str:
    if len(elements) >= 2:
        return _bare(entry[elements[0][1] : elements[1][0]])
    lead = _bare(entry[start + 1 : elements[0][0]]) if elements else ""
    return "," + lead if "\n" in lead else ", "


def _apply(text: str, edits: list[Edit]) -> str:
    # One pass that joins the pieces: splicing edit by edit copied the whole text each
    # time, and wrapping a config of 100,000 entries took most of an hour.
    pieces: list[str] = []
    done = 0
    for start, end, replacement in sorted(edits):
        if start < done:
            raise EditError("two edits overlap")
        pieces += (text[done:start], replacement)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def wrap_command(entry: str, command: str, prefix: list[str]) -> str:
    """A stdio entry's text with ``command`` as its command and ``prefix`` followed by the
    original command (its exact text) inserted at the front of its args."""
    members = _members(entry)
    cmd, args = _last(members, "command"), _last(members, "args")
    if cmd is None:
        raise EditError("the entry has no command")
    inserted = [*map(json_string, prefix), entry[cmd.value_start : cmd.value_end]]
    new_command = json_string(command)
    if args is None:
        sep = _member_separator(entry, members)
        array = "[" + ", ".join(inserted) + "]"
        member = f'{sep}"args"{_colon(entry, cmd)}{array}'
        return _apply(entry, [(cmd.value_start, cmd.value_end, new_command + member)])
    elements = element_spans(entry, args.value_start)
    if elements is None:
        raise EditError("args is not a list")
    if elements:
        sep = _element_separator(entry, args.value_start, elements)
        insertion: Edit = (elements[0][0], elements[0][0], sep.join(inserted) + sep)
    else:
        insertion = (args.value_end - 1, args.value_end - 1, ", ".join(inserted))
    return _apply(entry, [(cmd.value_start, cmd.value_end, new_command), insertion])


def unwrap_command(entry: str, cut: int, drop_empty_args: bool) -> str:
    """Undo :func:`wrap_command`: args ``[0, cut)`` go, args[cut] becomes the command.

    When nothing is left in args and ``drop_empty_args`` is set, the args member goes
    too if it directly follows the command (where :func:`wrap_command` puts it).
    """
    members = _members(entry)
    cmd, args = _last(members, "command"), _last(members, "args")
    elements = element_spans(entry, args.value_start) if args else None
    if cmd is None or args is None or elements is None or len(elements) <= cut:
        raise EditError("the entry is not as `mcptape wrap` writes it")
    original = entry[elements[cut][0] : elements[cut][1]]
    edits: list[Edit] = [(cmd.value_start, cmd.value_end, original)]
    if cut + 1 < len(elements):
        edits.append((elements[0][0], elements[cut + 1][0], ""))
    elif drop_empty_args and members.index(args) == members.index(cmd) + 1:
        edits = [(cmd.value_start, args.value_end, original)]
    else:
        edits.append((elements[0][0], elements[cut][1], ""))
    return _apply(entry, edits)


def replace_members(entry: str, remove: tuple[str, ...], insert: list[tuple[str, str]] | str) -> str:
    """The entry without the members named in ``remove``; in place of the first of them,
    the members ``insert`` as (key, JSON text) pairs, or ``insert`` as verbatim text."""
    members = _members(entry)
    gone = [i for i, m in enumerate(members) if m.key in remove]
    if not gone:
        raise EditError(f"the entry has none of {', '.join(remove)}")
    first = members[gone[0]]
    if isinstance(insert, str):
        text = insert
    else:
        colon, sep = _colon(entry, first), _member_separator(entry, members)
        text = sep.join(f"{json_string(key)}{colon}{value}" for key, value in insert)
    edits: list[Edit] = [(first.key_start, first.value_end, text)]
    for i in gone[1:]:
        edits.append((members[i - 1].value_end, members[i].value_end, ""))
    return _apply(entry, edits)


def member_run(entry: str, keys: tuple[str, ...]) -> str | None:
    """The exact text of the members named in ``keys`` if they stand together in the
    entry (from the first one's key to the last one's value), else None."""
    members = _members(entry)
    picked = [i for i, m in enumerate(members) if m.key in keys]
    if not picked or picked != list(range(picked[0], picked[-1] + 1)):
        return None
    return entry[members[picked[0]].key_start : members[picked[-1]].value_end]


def splice(text: str, spans: dict[str, tuple[int, int]], new_entries: dict[str, str]) -> str:
    """``text`` with the entries named in ``new_entries`` replaced by their new text."""
    return _apply(text, [(*spans[name], entry) for name, entry in new_entries.items()])
