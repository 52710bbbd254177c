"""A committed message's HTML, sent as references into the text the browser
already holds from the live stream.

When a streamed reply is committed, the widget swaps the plain live text for
the reply rendered to HTML. Sending that HTML in full would put every byte of
the reply on the wire twice. markdown-it copies a paragraph's text into its
HTML verbatim (it only escapes `& < > "` and turns markup into tags), so the
HTML's text runs, unescaped, are found in the streamed text, in order, and go
out as `[source, start, end]` spans; tags and anything rewritten go out as
literal strings.

The browser escapes every span it resolves, so a span that resolved against
the wrong text could garble a message but never inject markup; it checks the
text lengths first and asks for a full resync when they differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["encode_html"]

_MIN_SPAN = 11  # the cheapest span, `[0,1,2],` plus the split literal, costs 11 bytes
_SEARCH_AHEAD = 4_096  # how far past the last match a run may start (markdown drops syntax)
_TAG = re.compile(r"(<[^>]*>)")
_NEWLINE = re.compile(r"(\n)")
_ENTITY = re.compile(r"(&[#\w]+;)")
# What markdown-it escapes in text, and the browser in every span it resolves.
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
_UNESCAPES = {v: k for k, v in _ESCAPES.items()}

Part = str | list[int]


def encode_html(html: str, sources: list[str]) -> list[Part]:
    """`html` as literal strings and `[i, start, end]` spans of `sources[i]`."""
    parts: list[Part] = []
    cursors = [0] * len(sources)
    literal: list[str] = []
    for piece in _pieces(html, sources, cursors):
        for escaped, run in _text_runs(piece):
            span = _find(run, sources, cursors) if len(escaped) > _MIN_SPAN else None
            if span is None or len(escaped) <= _span_cost(span):
                literal.append(escaped)
                continue
            if literal:
                parts.append("".join(literal))
                literal.clear()
            parts.append(span)
    if literal:
        parts.append("".join(literal))
    return parts


def _pieces(html: str, sources: list[str], cursors: list[int]) -> Iterator[str]:
    """`html` split at tags, and a multi-line text run (a code block) split at its
    newlines only where the run as a whole is not in a source: markdown keeps a
    code block's lines as they came but may reindent a paragraph's. A generator,
    so each check starts where the previous span ended."""
    for piece in _TAG.split(html):
        if "\n" in piece and not piece.startswith("<"):
            whole = _text_runs(piece)
            if len(whole) == 1 and _find(whole[0][1], sources, list(cursors)) is not None:
                yield piece
            else:
                yield from _NEWLINE.split(piece)
        else:
            yield piece


def _text_runs(piece: str) -> list[tuple[str, str | None]]:
    """(the HTML, the source text it shows or None) for each part of `piece`.

    A text piece whose only entities are the four markdown-it writes is one run:
    the browser escapes a resolved span the same way, so code full of quotes is
    referenced, not resent. A tag, or text with any other entity, is split as
    before and its entities stay literal."""
    if not piece or piece[0] == "<" or piece == "\n":
        return [(piece, None)]
    raw = _ENTITY.sub(lambda m: _UNESCAPES.get(m.group(0), m.group(0)), piece)
    if "".join(_ESCAPES.get(c, c) for c in raw) == piece:
        return [(piece, raw)]
    return [(p, None if p.startswith("&") else p) for p in _ENTITY.split(piece)]


def _span_cost(span: list[int]) -> int:
    # `[0,186,214],` on the wire, plus the quotes and comma it splits a literal into.
    return len(str(span[1])) + len(str(span[2])) + 9


def _find(run: str | None, sources: list[str], cursors: list[int]) -> list[int] | None:
    if run is None:
        return None  # markup, or an entity we did not write: never reference it
    for i, source in enumerate(sources):
        start = source.find(run, cursors[i], cursors[i] + len(run) + _SEARCH_AHEAD)
        if start >= 0:
            cursors[i] = start + len(run)
            return [i, start, start + len(run)]
    return None
