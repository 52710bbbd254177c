"""A committed message's HTML, sent as references into the text the browser
already holds from the live stream.

When a streamed reply is committed, the widget swaps the plain live text for
the reply rendered to HTML. Sending that HTML in full would put every byte of
the reply on the wire twice. markdown-it copies a paragraph's text into its
HTML verbatim (it only escapes `& < > "` and turns markup into tags), so the
HTML's text runs are found in the streamed text, in order, and go out as
`[source, start, end]` spans; tags, entities and anything rewritten go out as
literal strings.

The browser escapes every span it resolves, so a span that resolved against
the wrong text could garble a message but never inject markup; it checks the
text lengths first and asks for a full resync when they differ.
"""

from __future__ import annotations

import re

__all__ = ["encode_html"]

_MIN_SPAN = 11  # the cheapest span, `[0,1,2],` plus the split literal, costs 11 bytes
_SEARCH_AHEAD = 4_096  # how far past the last match a run may start (markdown drops syntax)
_MARKUP = re.compile(r"(<[^>]*>|&[#\w]+;|\n)")

Part = str | list[int]


def encode_html(html: str, sources: list[str]) -> list[Part]:
    """`html` as literal strings and `[i, start, end]` spans of `sources[i]`."""
    parts: list[Part] = []
    cursors = [0] * len(sources)
    literal: list[str] = []
    for piece in _MARKUP.split(html):
        span = _find(piece, sources, cursors) if len(piece) > _MIN_SPAN else None
        if span is None or len(piece) <= _span_cost(span):
            literal.append(piece)
            continue
        if literal:
            parts.append("".join(literal))
            literal.clear()
        parts.append(span)
    if literal:
        parts.append("".join(literal))
    return parts


def _span_cost(span: list[int]) -> int:
    # `[0,186,214],` on the wire, plus the quotes and comma it splits a literal into.
    return len(str(span[1])) + len(str(span[2])) + 9


def _find(run: str, sources: list[str], cursors: list[int]) -> list[int] | None:
    if "<" in run or "&" in run:
        return None  # markup the split did not catch; never reference it
    for i, source in enumerate(sources):
        start = source.find(run, cursors[i], cursors[i] + len(run) + _SEARCH_AHEAD)
        if start >= 0:
            cursors[i] = start + len(run)
            return [i, start, start + len(run)]
    return None
