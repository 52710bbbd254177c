"""Issue 14.7: a stream that never goes silent but never says anything either
(SSE comments, pings) ends after `Timeouts.idle` without content; one that
talks forever ends after `Timeouts.total`. Against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from mentra_nb import StreamError
from mentra_nb.messages import Message
from mentra_nb.providers._http import Timeouts
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.base import ProviderRequest
from tests.providers.conftest import FAST_RETRY, Stream


def _event(kind: str, data: dict) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


OPENING = _event("message_start", {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
    "usage": {"input_tokens": 1, "output_tokens": 0}}}) + _event(
    "content_block_start", {"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}})
DELTA = _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": "more "}})
PINGS = b": keep-alive\n\n" + _event("ping", {"type": "ping"})


async def _drain(provider: AnthropicProvider) -> list[object]:
    request = ProviderRequest(model="m", messages=[Message.user("hi")])
    return [event async for event in provider.stream(request)]


async def test_keepalives_without_content_end_the_stream(server, client, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-000000")
    # Ten thousand pings, far longer than the idle limit lets the stream run.
    server.queue(Stream(OPENING + PINGS * 10_000, chunk=len(PINGS), pause=0.02))
    provider = AnthropicProvider(base_url=server.url, client=client, retry=FAST_RETRY,
                                 timeouts=Timeouts(idle=0.5))
    with pytest.raises(StreamError, match=r"sent no content for 0.5 s \(only keep-alives"):
        await _drain(provider)


async def test_a_reply_that_never_ends_is_cut_at_the_total_limit(server, client, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-000000")
    server.queue(Stream(OPENING + DELTA * 10_000, chunk=len(DELTA), pause=0.02))
    provider = AnthropicProvider(base_url=server.url, client=client, retry=FAST_RETRY,
                                 timeouts=Timeouts(idle=60, total=1.0))
    with pytest.raises(StreamError, match=r"took longer than 1 s in all"):
        await _drain(provider)


def test_the_limits_have_defaults_of_minutes_and_reject_nonsense():
    assert 60 <= Timeouts().idle <= 600 and Timeouts().total >= Timeouts().idle
    with pytest.raises(ValueError):
        Timeouts(idle=0)
