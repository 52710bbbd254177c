"""A provider that plays scripted streams, for tests and tutorials.

    provider = ScriptedProvider("anthropic", [text_stream("done")])
    script, control = controlled_stream()      # a stream a test feeds by hand
    control.send(MessageStarted(...)); control.fail(StreamError("cut"))

Each `stream()` call plays the next script and records the request, so a
test can assert on exactly what the model was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field

from mentra_nb.errors import ProviderError
from mentra_nb.messages import Usage
from mentra_nb.providers.base import ModelInfo, ProviderRequest
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderEvent,
)

__all__ = [
    "ScriptedProvider",
    "StreamControl",
    "StreamScript",
    "controlled_stream",
    "error_stream",
    "ok_stream",
    "text_stream",
    "tool_use_stream",
]

_END = object()


@dataclass
class StreamScript:
    """Events to play: a fixed list, or a queue fed through a `StreamControl`.
    `error` (if set) is raised after the listed events."""

    events: list[ProviderEvent] = field(default_factory=list)
    error: BaseException | None = None
    queue: asyncio.Queue[object] | None = None
    delay: float = 0.0

    async def play(self) -> AsyncIterator[ProviderEvent]:
        for event in self.events:
            if self.delay:
                await asyncio.sleep(self.delay)
            yield event
        if self.error is not None:
            raise self.error
        if self.queue is not None:
            while True:
                item = await self.queue.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item  # type: ignore[misc]


class StreamControl:
    """Feeds a controlled stream from a test, one event at a time."""

    def __init__(self, queue: asyncio.Queue[object]) -> None:
        self._queue = queue

    def send(self, event: ProviderEvent) -> None:
        self._queue.put_nowait(event)

    def fail(self, error: BaseException) -> None:
        """The stream raises `error` once the events sent before it are consumed."""
        self._queue.put_nowait(error)

    def close(self) -> None:
        """End the stream (without MessageStopped it is a cut stream)."""
        self._queue.put_nowait(_END)


def controlled_stream() -> tuple[StreamScript, StreamControl]:
    """A script and its control: the test feeds the stream event by event (`control.send(...)`,
    `control.fail(err)`).
    """
    queue: asyncio.Queue[object] = asyncio.Queue()
    return StreamScript(queue=queue), StreamControl(queue)


def ok_stream(events: Sequence[ProviderEvent], *, delay: float = 0.0) -> StreamScript:
    """A script that yields `events` (optionally `delay` seconds apart), then ends."""
    return StreamScript(events=list(events), delay=delay)


def error_stream(events: Sequence[ProviderEvent], error: BaseException) -> StreamScript:
    """Play `events`, then raise `error` (a stream that breaks midway)."""
    return StreamScript(events=list(events), error=error)


def text_stream(text: str, *, model: str = "model", chunks: int = 1, usage: Usage | None = None,
                delay: float = 0.0) -> StreamScript:
    """A complete text reply, split into `chunks` deltas."""
    size = max(1, -(-len(text) // max(1, chunks)))
    parts = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return ok_stream(
        [
            MessageStarted(id=f"msg-{text[:16]}", model=model),
            ContentBlockStarted.text(0),
            *(ContentBlockDelta.text(0, part) for part in parts),
            ContentBlockStopped(index=0),
            MessageDelta(stop_reason="end_turn", usage=usage or Usage(input_tokens=10, output_tokens=len(parts))),
            MessageStopped(),
        ],
        delay=delay,
    )


def tool_use_stream(id: str, name: str, input_json: str, *, model: str = "model",
                    calls: Iterable[tuple[str, str, str]] = ()) -> StreamScript:
    """A reply that calls tool `name` (plus any extra `(id, name, input_json)` calls)."""
    events: list[ProviderEvent] = [MessageStarted(id=f"msg-{id}", model=model)]
    for index, (call_id, call_name, call_input) in enumerate([(id, name, input_json), *calls]):
        events += [
            ContentBlockStarted.tool_use(index, call_id, call_name),
            ContentBlockDelta.tool_input_json(index, call_input),
            ContentBlockStopped(index=index),
        ]
    events += [MessageDelta(stop_reason="tool_use", usage=Usage(input_tokens=10, output_tokens=5)),
               MessageStopped()]
    return ok_stream(events)


class ScriptedProvider:
    """Plays `scripts` in order, one per model call, recording every request.

    `name` is the provider prefix it serves (`"anthropic"` makes it answer
    `anthropic:*` model ids). Running out of scripts is a `ProviderError`.
    """

    def __init__(self, name: str = "scripted", scripts: Iterable[StreamScript] = (),
                 models: Iterable[ModelInfo | str] = ()) -> None:
        self.name = name
        self.tool_result_images = True  # a test double: it takes whatever the test sends
        self.scripts = list(scripts)
        self._models = [m if isinstance(m, ModelInfo) else ModelInfo(id=m, provider=name)
                        for m in models]
        self.requests: list[ProviderRequest] = []
        self._played = 0

    def add(self, *scripts: StreamScript) -> None:
        self.scripts.extend(scripts)

    def recorded_requests(self) -> list[ProviderRequest]:
        return list(self.requests)

    async def list_models(self) -> list[ModelInfo]:
        return list(self._models)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        if self._played >= len(self.scripts):
            raise ProviderError(
                f"scripted provider '{self.name}' has no script left for call "
                f"{self._played + 1} (it was given {len(self.scripts)}); add more with .add()"
            )
        script = self.scripts[self._played]
        self._played += 1
        async for event in script.play():
            yield event
