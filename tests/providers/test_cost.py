"""Cached-token counts read back from each provider's replayed wire format, and the
dollars they cost at the price table's rows (cached input at the cache-read price)."""

from __future__ import annotations

import pytest

from mentra_nb import pricing
from mentra_nb.providers.gemini import GeminiProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.openai_chat import OpenAIChatProvider

from .conftest import FAST_RETRY, Stream, wire
from .helpers import runtime_with


def _per_million(**tokens_times_price: tuple[int, float]) -> float:
    return sum(t * p for t, p in tokens_times_price.values()) / 1e6


async def test_openai_responses_cached_tokens_cost_the_cached_input_price(server, client, db_path) -> None:
    provider = OpenAIProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("openai_text.sse")))  # input 37 of which 5 cached, output 11
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "openai:gpt-4.1-2025-04-14")  # a dated snapshot: the gpt-4.1 row
        await agent.send("Hello")
    usage = agent.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (32, 5, 11)
    # gpt-4.1: $2 input, $0.50 cached input, $8 output per million tokens.
    assert usage.cost_usd == pytest.approx(_per_million(i=(32, 2.0), c=(5, 0.50), o=(11, 8.0)))


async def test_openai_chat_cached_tokens_use_the_openai_rows(server, client, db_path) -> None:
    provider = OpenAIChatProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("chat_text.sse")))  # prompt 19 of which 4 cached, completion 10
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "openai-chat:gpt-4o-mini")
        await agent.send("Hello")
    usage = agent.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (15, 4, 10)
    # gpt-4o-mini: $0.15 input, $0.075 cached input, $0.60 output.
    assert usage.cost_usd == pytest.approx(_per_million(i=(15, 0.15), c=(4, 0.075), o=(10, 0.60)))


async def test_gemini_cached_content_tokens_cost_the_context_caching_price(server, client, db_path) -> None:
    provider = GeminiProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("gemini_tools.sse")), Stream(wire("gemini_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "gemini:gemini-2.5-flash")
        await agent.send("Weather in Paris and Tokyo?")
    usage = agent.usage
    # Call 1: prompt 60 of which 16 cached, 20 candidates (+30 thoughts, billed as
    # output); call 2: prompt 9, output 12.
    assert usage.cache_read_tokens == 16
    expected = pricing.price("gemini:gemini-2.5-flash")
    assert expected is not None and expected.cache_read == 0.03
    assert usage.cost_usd == pytest.approx(_per_million(
        i=(usage.input_tokens, 0.30), c=(16, 0.03), o=(usage.output_tokens, 2.50)))
    assert usage.cost_usd > 0


async def test_a_model_without_a_price_has_an_unknown_cost_not_zero(server, client, db_path) -> None:
    provider = OpenAIProvider(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)
    server.queue(Stream(wire("openai_text.sse")))
    async with runtime_with(provider, db_path) as rt:
        agent = rt.spawn("w", "openai:gpt-unpriced-9")
        await agent.send("Hello")
    assert agent.usage.output_tokens == 11
    assert agent.usage.cost_usd is None
    assert pricing.format_cost(agent.usage.cost_usd) == "cost unknown"
