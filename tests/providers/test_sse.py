"""The SSE parser, on the framing corners of the standard that providers do hit."""

from __future__ import annotations

import pytest

from mentra_nb import StreamError
from mentra_nb.providers._sse import ServerSentEvent, SSEParser


def parse(*chunks: bytes) -> list[ServerSentEvent]:
    parser = SSEParser()
    return [event for chunk in chunks for event in parser.feed(chunk)]


def test_named_events_multi_line_data_and_comments() -> None:
    events = parse(b": keep-alive\n\nevent: ping\ndata: {}\n\ndata: line one\ndata: line two\nid: 7\n\n")
    assert events == [ServerSentEvent(event="ping", data="{}"),
                      ServerSentEvent(data="line one\nline two", id="7")]


def test_events_split_anywhere_across_chunks_and_multibyte_characters() -> None:
    raw = 'event: x\r\ndata: {"t": "Bogotá ☀"}\r\n\r\n'.encode()
    whole = parse(raw)
    for size in (1, 2, 3, 5, 7):
        assert parse(*(raw[i : i + size] for i in range(0, len(raw), size))) == whole
    assert whole == [ServerSentEvent(event="x", data='{"t": "Bogotá ☀"}')]


def test_cr_only_line_endings_and_a_cr_lf_split_between_chunks() -> None:
    assert parse(b"data: a\r\r") == [ServerSentEvent(data="a")]
    assert parse(b"data: a\r", b"\n\r\n") == [ServerSentEvent(data="a")]


def test_an_event_without_its_blank_line_is_not_dispatched() -> None:
    assert parse(b"data: complete\n\ndata: cut off") == [ServerSentEvent(data="complete")]


def test_a_leading_byte_order_mark_and_no_space_after_the_colon() -> None:
    assert parse(b"\xef\xbb\xbfdata:{}\n\n") == [ServerSentEvent(data="{}")]


def test_json_payloads_that_are_not_json_raise_stream_errors() -> None:
    with pytest.raises(StreamError, match="not JSON"):
        ServerSentEvent(data="{oops").json()
