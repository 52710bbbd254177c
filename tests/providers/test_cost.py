"""Cached-token counts read back from each provider's replayed wire format, and the
dollars they cost at the price table's rows (cached input at the cache-read price)."""

from __future__ import annotations

import pytest

from mentra_nb import AgentConfig, BudgetExceeded, ConfigError, SqliteStore, Usage, pricing
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.gemini import GeminiProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.openai_chat import OpenAIChatProvider

from .conftest import FAST_RETRY, Stream, wire
from .helpers import runtime_with
from .sse_bodies import USAGE_FIELDS, chat_sse, sse_body


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


# --- impossible usage reports (issue 33) -----------------------------------------------

PROVIDERS = {"openai-chat": OpenAIChatProvider, "openai": OpenAIProvider, "gemini": GeminiProvider,
             "anthropic": AnthropicProvider}
PRICED_MODEL = {"openai-chat": "gpt-4o-mini", "openai": "gpt-4o-mini", "gemini": "gemini-2.5-flash",
                "anthropic": "claude-haiku-4-5"}


def _provider(name: str, server, client):
    return PROVIDERS[name](api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)


@pytest.mark.parametrize("budget", [{"max_cost_usd": 0.50}, {"max_tokens_total": 100_000},
                                    {"max_cost_usd": 0.50, "max_tokens_total": 100_000}])
async def test_negative_usage_never_lowers_spending_and_the_budget_stops_the_next_call(
        server, client, db_path, caplog, budget) -> None:
    # The server: completion_tokens -5,000,000 on every answer.
    hostile = {"prompt_tokens": 20, "completion_tokens": -5_000_000}
    server.queue(*(Stream(chat_sse("ok", hostile)) for _ in range(5)))
    async with runtime_with(_provider("openai-chat", server, client), db_path) as rt:
        agent = rt.spawn("w", "openai-chat:gpt-4o-mini", AgentConfig(**budget))
        await agent.send("one")
        usage = agent.usage
        assert (usage.input_tokens, usage.output_tokens, usage.misreported_calls) == (20, 0, 1)
        assert usage.cost_usd is None  # unknown, never negative
        assert "openai-chat reported impossible token counts (completion_tokens=-5000000)" in caplog.text
        for text in ("two", "three"):
            with pytest.raises(BudgetExceeded, match=r"1 of its model calls had an impossible usage report"
                                                     r".*cannot be checked.*agent.configure\("):
                await agent.send(text)
        assert len(server.requests) == 1  # no call after the misreported one
        # Without the budget the agent goes on; its cost stays unknown.
        agent.configure(max_cost_usd=None, max_tokens_total=None)
        await agent.resume()
        assert len(server.requests) == 2
        assert agent.usage.misreported_calls == 2 and agent.usage.cost_usd is None
        assert agent.usage.output_tokens == 0 and agent.usage.input_tokens == 40
    # The state file holds the flag: a resumed agent's budget stops it too.
    store = SqliteStore(db_path)
    try:
        [record] = store.list_agents()
        assert record.usage.misreported_calls == 2 and record.usage.cost_usd is None
    finally:
        store.close()


@pytest.mark.parametrize("provider", list(PROVIDERS))
@pytest.mark.parametrize(("value", "clamped"), [(-5_000_000, 0), (float("nan"), 0), (float("inf"), 10**8),
                                                ("12abc", 0), (1e30, 10**8), (2.5, 2), (True, 0),
                                                ([3], 0), (10**400, 10**8)])
async def test_each_provider_clamps_and_flags_an_impossible_count(server, client, db_path, caplog,
                                                                 provider, value, clamped) -> None:
    prompt_field, output_field = USAGE_FIELDS[provider]
    server.queue(Stream(sse_body(provider, "ok", {prompt_field: 30, output_field: value})))
    async with runtime_with(_provider(provider, server, client), db_path) as rt:
        agent = rt.spawn("w", f"{provider}:{PRICED_MODEL[provider]}")
        await agent.send("hi")
    usage = agent.usage
    assert (usage.input_tokens, usage.output_tokens) == (30, clamped)
    assert usage.misreported_calls == 1 and usage.cost_usd is None
    assert f"{provider} reported impossible token counts ({output_field}=" in caplog.text
    assert caplog.text.count("reported impossible token counts") == 1  # once a call


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_a_possible_report_is_taken_as_it_is(server, client, db_path, caplog, provider) -> None:
    prompt_field, output_field = USAGE_FIELDS[provider]
    server.queue(Stream(sse_body(provider, "ok", {prompt_field: 30, output_field: "7"})))
    async with runtime_with(_provider(provider, server, client), db_path) as rt:
        agent = rt.spawn("w", f"{provider}:{PRICED_MODEL[provider]}")
        await agent.send("hi")
    assert (agent.usage.input_tokens, agent.usage.output_tokens, agent.usage.misreported_calls) == (30, 7, 0)
    assert agent.usage.cost_usd is not None and agent.usage.cost_usd > 0
    assert "impossible" not in caplog.text


def test_a_stored_negative_usage_loads_clamped_and_flagged() -> None:
    # A state file written before the fix holds the negative counts and cost as they were.
    stored = Usage.model_validate_json('{"input_tokens": 20, "output_tokens": -5000000, "cost_usd": -238.75}')
    assert (stored.output_tokens, stored.cost_usd, stored.misreported_calls) == (0, None, 1)
    assert (Usage(cost_usd=float("nan")).cost_usd, Usage(cost_usd=-1.0).misreported_calls) == (None, 1)
    total = stored + Usage(input_tokens=5, cost_usd=0.01) + stored
    assert (total.input_tokens, total.misreported_calls, total.cost_usd) == (45, 2, None)
    assert pricing.priced("openai:gpt-4o-mini", stored).cost_usd is None


def test_an_infinite_price_is_refused() -> None:
    with pytest.raises(ConfigError, match="finite"):
        pricing.register("x:y", input=float("inf"), output=1)
