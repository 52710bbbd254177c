"""What providers do when the network, the server or the stream misbehaves.

Faults are real: a reset is a TCP RST from the local server, a cut is a
chunked body that never ends, a stall is a server that stops writing.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from mentra_nb import (
    InvalidRequest,
    ProviderAuthError,
    StreamError,
    TransientProviderError,
)
from mentra_nb.messages import Role, ToolResultBlock
from mentra_nb.providers._http import RetryPolicy, Timeouts, parse_retry_after
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.events import MessageStopped, RetryAttempt
from mentra_nb.providers.openai_chat import OpenAIChatProvider
from mentra_nb.runtime.events import RetryAttempted, TextDelta
from tests.conftest import WAIT_LIMIT, wait_until

from .conftest import FAST_RETRY, Reply, Reset, Stream, wire
from .helpers import ask, assemble, collect, runtime_with

OVERLOADED = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}}


def anthropic(server, client, **kwargs) -> AnthropicProvider:
    return AnthropicProvider(api_key="k", base_url=server.url, client=client,
                             retry=kwargs.pop("retry", FAST_RETRY), **kwargs)


async def test_429_with_retry_after_waits_that_long_then_succeeds(server, client) -> None:
    server.queue(Reply(429, OVERLOADED, headers={"retry-after": "1"}), Stream(wire("anthropic_text.sse")))
    started = time.monotonic()
    events = await collect(anthropic(server, client).stream(ask()))
    elapsed = time.monotonic() - started
    retries = [e for e in events if isinstance(e, RetryAttempt)]
    assert retries == [RetryAttempt(attempt=1, delay_s=1.0, reason=retries[0].reason)]
    assert "HTTP 429" in retries[0].reason and "rate_limit_error" in retries[0].reason
    assert 0.95 <= elapsed < 5
    assert isinstance(events[-1], MessageStopped)
    assert len(server.requests) == 2


async def test_retry_after_is_capped(server, client) -> None:
    policy = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.2)
    server.queue(Reply(503, "busy", headers={"retry-after": "3600"}), Stream(wire("anthropic_text.sse")))
    events = await collect(anthropic(server, client, retry=policy).stream(ask()))
    assert [e.delay_s for e in events if isinstance(e, RetryAttempt)] == [0.2]


def test_retry_after_reads_seconds_http_dates_and_milliseconds() -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}), now=now) == 30.0
    assert parse_retry_after(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}), now=now) == 0.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


async def test_500_then_success_is_retried_and_announced_to_the_agent(server, client, db_path) -> None:
    server.queue(Reply(500, {"type": "error", "error": {"type": "api_error", "message": "Internal"}}),
                 Stream(wire("anthropic_text.sse")))
    async with runtime_with(anthropic(server, client), db_path) as rt:
        agent = rt.spawn("w", "anthropic:m")
        seen: list[object] = []
        agent.on_event(seen.append)
        reply = await agent.send("hi")
    assert reply.text == "Hello!"
    retries = [e for e in seen if isinstance(e, RetryAttempted)]
    assert len(retries) == 1 and retries[0].attempt == 1 and "HTTP 500" in retries[0].reason
    assert len(server.requests) == 2


async def test_a_connection_reset_before_the_first_byte_is_retried(server, client) -> None:
    server.queue(Reset(), Reset(), Stream(wire("anthropic_text.sse")))
    events = await collect(anthropic(server, client).stream(ask()))
    assert [e.attempt for e in events if isinstance(e, RetryAttempt)] == [1, 2]
    assert isinstance(events[-1], MessageStopped)


async def test_retries_stop_after_the_budget_of_attempts(server, client) -> None:
    server.queue(*[Reply(503, "unavailable") for _ in range(4)])
    with pytest.raises(TransientProviderError, match="HTTP 503.*gave up after 4 attempts") as caught:
        await collect(anthropic(server, client).stream(ask()))
    assert caught.value.status_code == 503
    assert len(server.requests) == 4


async def test_retries_stop_when_the_wait_would_exceed_the_time_budget(server, client) -> None:
    policy = RetryPolicy(max_retries=5, base_delay=0.01, max_delay=60, budget_s=1)
    server.queue(Reply(429, OVERLOADED, headers={"retry-after": "30"}))
    started = time.monotonic()
    with pytest.raises(TransientProviderError, match="retry budget"):
        await collect(anthropic(server, client, retry=policy).stream(ask()))
    assert time.monotonic() - started < 1


async def test_a_400_is_not_retried_and_keeps_the_providers_message(server, client) -> None:
    server.queue(Reply(400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "max_tokens: must be greater than 0"}}))
    with pytest.raises(InvalidRequest, match="invalid_request_error.*max_tokens: must be greater than 0"):
        await collect(anthropic(server, client).stream(ask()))
    assert len(server.requests) == 1


async def test_a_wrong_key_is_an_auth_error_naming_the_variable(server, client, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong-key-123456789")
    provider = AnthropicProvider(base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Reply(401, {"type": "error", "error": {"type": "authentication_error",
                                                        "message": "invalid x-api-key"}}))
    with pytest.raises(ProviderAuthError) as caught:
        await collect(provider.stream(ask()))
    assert "ANTHROPIC_API_KEY" in str(caught.value) and "HTTP 401" in str(caught.value)
    assert len(server.requests) == 1


async def test_a_missing_key_names_the_variable_and_the_env_file(client) -> None:
    provider = AnthropicProvider(base_url="http://127.0.0.1:9", client=client)
    with pytest.raises(ProviderAuthError, match="set ANTHROPIC_API_KEY in the environment or in a .env"):
        await collect(provider.stream(ask()))


async def test_a_cut_mid_stream_fails_the_run_and_rolls_it_back(server, client, db_path) -> None:
    body = wire("anthropic_tool_use.sse")
    server.queue(Stream(body, cut_after=body.index(b'" Francisc')))
    async with runtime_with(anthropic(server, client), db_path) as rt:
        agent = rt.spawn("w", "anthropic:m")
        with pytest.raises(StreamError, match="broke mid-stream"):
            await agent.send("weather?")
        assert [m.role for m in agent.history] in ([], [Role.USER])
        assert agent.snapshot.status.name == "failed"
    assert len(server.requests) == 1  # never retried once the stream had started


async def test_a_stream_that_ends_cleanly_without_its_final_event_is_an_error(server, client) -> None:
    body = wire("anthropic_text.sse")
    server.queue(Stream(body[: body.index(b"event: message_stop")]))
    with pytest.raises(StreamError, match="ended before message_stop"):
        await assemble(anthropic(server, client), ask())


async def test_malformed_sse_data_is_a_stream_error(server, client) -> None:
    body = wire("anthropic_text.sse").replace(
        b'data: {"type": "content_block_stop", "index": 0}', b'data: {"type": "content_block_stop", "ind')
    server.queue(Stream(body))
    with pytest.raises(StreamError, match="malformed server-sent event"):
        await assemble(anthropic(server, client), ask())


async def test_an_event_missing_its_fields_is_a_stream_error(server, client) -> None:
    body = wire("anthropic_text.sse").replace(
        b'data: {"type": "content_block_stop", "index": 0}', b'data: {"type": "content_block_stop"}')
    server.queue(Stream(body))
    with pytest.raises(StreamError, match="does not match its protocol"):
        await assemble(anthropic(server, client), ask())


async def test_a_200_that_is_not_an_event_stream_is_a_stream_error(server, client) -> None:
    server.queue(Stream(b"<html>proxy login</html>", content_type="text/html"))
    with pytest.raises(StreamError, match="content-type 'text/html'.*Check the base URL"):
        await assemble(anthropic(server, client), ask())


async def test_a_silent_server_mid_stream_hits_the_read_timeout(server) -> None:
    body = wire("anthropic_text.sse")
    server.queue(Stream(body, chunk=len(body) // 2, pause=1.5))
    provider = AnthropicProvider(api_key="k", base_url=server.url, timeouts=Timeouts(read=0.3),
                                 retry=FAST_RETRY)
    try:
        with pytest.raises(StreamError, match="went silent mid-stream"):
            await assemble(provider, ask())
    finally:
        await provider.aclose()


async def test_invalid_json_in_tool_arguments_goes_back_to_the_model_as_an_error(
    server, client, db_path
) -> None:
    # The first call's arguments lose their closing brace: `{"location": "Paris"`.
    broken = wire("chat_parallel_tools.sse").replace(b'\\"Paris\\"}"', b'\\"Paris\\""')
    assert broken != wire("chat_parallel_tools.sse")
    server.queue(Stream(broken), Stream(wire("chat_text.sse")))
    provider = OpenAIChatProvider(api_key="k", base_url=server.url, client=client)
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "openai-chat:gpt-4o")
        reply = await agent.send("Weather?")
    assert reply.text == "Hello there"
    results = agent.history[2].content
    assert isinstance(results[0], ToolResultBlock) and results[0].is_error
    assert "not valid JSON" in results[0].content
    assert results[1] == ToolResultBlock(tool_use_id="call_ABCDEFGHIJKLMNOPQRSTUVWX",
                                         content="12:00 in Europe/Paris")
    tool_messages = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("Error: ")


async def test_cancelling_a_run_mid_stream_closes_the_connection(server, client, db_path) -> None:
    body = wire("anthropic_text.sse")  # written slowly, 16 bytes at a time
    server.queue(Stream(body, chunk=16, pause=0.05))
    async with runtime_with(anthropic(server, client), db_path) as rt:
        agent = rt.spawn("w", "anthropic:m")
        first_text = asyncio.Event()
        agent.on_event(lambda e: first_text.set() if isinstance(e, TextDelta) else None)
        task = asyncio.ensure_future(agent.send("hi"))
        await asyncio.wait_for(first_text.wait(), WAIT_LIMIT)
        agent.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all(m.role is Role.USER for m in agent.history)
    await wait_until(lambda: bool(server.errors))
    # The server's next write hit a closed socket: the client hung up, it did not read on.
    assert server.errors and isinstance(server.errors[0], (BrokenPipeError, ConnectionResetError))
