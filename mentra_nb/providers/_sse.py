"""Server-sent events, parsed incrementally as the WHATWG HTML standard defines them.

Providers stream over SSE, but each bends it a little: Anthropic names its
events (`event: message_start`), OpenAI's Chat Completions ends with
`data: [DONE]`, Gemini sends bare `data:` frames. This parser knows none of
that; it turns bytes into `ServerSentEvent`s and nothing else.

    parser = SSEParser()
    for event in parser.feed(b"event: ping\\ndata: {}\\n\\n"):
        ...
"""

from __future__ import annotations

import asyncio
import codecs
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from mentra_nb.errors import StreamError

__all__ = ["SSEParser", "ServerSentEvent", "iter_sse"]

# A single event larger than this is a broken or hostile server, not a model reply.
MAX_EVENT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ServerSentEvent:
    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None

    def json(self) -> Any:
        """The `data` field as JSON; a payload that is not JSON is a `StreamError`."""
        try:
            return json.loads(self.data)
        except RecursionError:
            raise StreamError(
                f"the provider sent a server-sent event nested too deeply to parse: {self.data[:200]!r}"
            ) from None
        except json.JSONDecodeError as err:
            raise StreamError(
                f"the provider sent a malformed server-sent event: its data is not JSON "
                f"({err.msg} at position {err.pos}): {self.data[:200]!r}"
            ) from None


class SSEParser:
    """Feed it bytes as they arrive; it yields each event once its blank line is seen."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._first = True
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None
        self._size = 0
        self._pending_cr = False

    def feed(self, chunk: bytes) -> Iterator[ServerSentEvent]:
        text = self._decoder.decode(chunk)
        if self._first and text:
            text = text.removeprefix("\ufeff")
            self._first = False
        if self._pending_cr and text.startswith("\n"):
            # The CR that ended the previous chunk was half of a CRLF pair.
            text = text[1:]
        self._pending_cr = False
        self._buffer += text
        while True:
            line, ending = self._next_line()
            if ending is None:
                break
            event = self._line(line)
            if event is not None:
                yield event
        if len(self._buffer) + self._size > MAX_EVENT_BYTES:
            raise StreamError(
                f"the provider sent a server-sent event larger than {MAX_EVENT_BYTES} bytes; "
                "the stream is not a model reply"
            )

    def _next_line(self) -> tuple[str, str | None]:
        buffer = self._buffer
        lf, cr = buffer.find("\n"), buffer.find("\r")
        if lf < 0 and cr < 0:
            return "", None
        if cr < 0 or (0 <= lf < cr):
            self._buffer = buffer[lf + 1 :]
            return buffer[:lf], "\n"
        if cr + 1 < len(buffer):
            skip = 2 if buffer[cr + 1] == "\n" else 1
        else:
            # A CR at the end of the chunk: its LF may come with the next chunk.
            skip = 1
            self._pending_cr = True
        self._buffer = buffer[cr + skip :]
        return buffer[:cr], "\r"

    def _line(self, line: str) -> ServerSentEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment, often a keep-alive
        field, sep, value = line.partition(":")
        if sep:
            value = value.removeprefix(" ")
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
            self._size += len(value)
        elif field == "id" and "\0" not in value:
            self._id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
        # Any other field name is ignored, as the standard says.
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = ServerSentEvent(
            event=self._event or "message", data="\n".join(self._data), id=self._id, retry=self._retry
        )
        self._event, self._data, self._size = "", [], 0
        return event


async def iter_sse(
    response: httpx.Response, *, deadline: Callable[[], tuple[float, str]] | None = None,
) -> AsyncIterator[ServerSentEvent]:
    """The events of a streaming response, after checking it really is an event stream.

    An event left without its closing blank line when the body ends is dropped,
    as the standard says; providers then notice that their final event is missing.
    `deadline()` gives (a `time.monotonic()` instant, a message): reading stops
    with a `StreamError` carrying the message once that instant passes, however
    many bytes (keep-alive comments) are still arriving.
    """
    content_type = response.headers.get("content-type", "")
    if "text/event-stream" not in content_type:
        body = (await response.aread())[:300].decode("utf-8", "replace")
        raise StreamError(
            f"expected a server-sent event stream but the server answered with "
            f"content-type {content_type or 'none'!r}: {body!r}. Check the base URL: "
            "a proxy or a non-streaming endpoint may be answering instead of the model API."
        )
    parser = SSEParser()
    chunks = response.aiter_bytes()
    while True:
        if deadline is None:
            chunk = await anext(chunks, None)
        else:
            when, message = deadline()
            try:
                # Around the read only, never around the yield: no task per chunk either.
                async with asyncio.timeout(max(0.0, when - time.monotonic())):
                    chunk = await anext(chunks, None)
            except TimeoutError:
                raise StreamError(message) from None
        if chunk is None:
            return
        for event in parser.feed(chunk):
            yield event
