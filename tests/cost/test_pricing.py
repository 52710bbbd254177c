"""The price table: lookup rules, user prices, long-context tiers, unknown costs."""

from __future__ import annotations

import pytest

from mentra_nb import ConfigError, Usage, pricing
from mentra_nb.pricing import Price, PriceTable


def test_a_dated_snapshot_costs_what_its_alias_costs() -> None:
    assert pricing.price("anthropic:claude-sonnet-4-5-20250929") == pricing.price("anthropic:claude-sonnet-4-5")
    assert pricing.price("openai:gpt-4.1-2025-04-14") == pricing.price("openai:gpt-4.1")


def test_chat_completions_models_use_the_openai_rows() -> None:
    assert pricing.price("openai-chat:gpt-4o-mini") == pricing.price("openai:gpt-4o-mini")


def test_offline_models_cost_nothing_and_unknown_models_have_no_price() -> None:
    assert pricing.cost("test:default", Usage(input_tokens=500, output_tokens=50)) == 0
    assert pricing.price("openai:gpt-unknown") is None
    assert pricing.price("ollama:llama3:8b") is None  # a local server may be anyone's machine
    assert pricing.cost("openai:gpt-unknown", Usage(input_tokens=1)) is None


def test_registered_prices_win_and_a_provider_wildcard_prices_the_rest() -> None:
    table = PriceTable()
    table.register("ollama:*", input=0, output=0)
    table.register("ollama:big-model", {"input": 1, "output": 2})
    assert table.cost("ollama:llama3:8b", Usage(input_tokens=10**6)) == 0
    assert table.cost("ollama:big-model", Usage(input_tokens=10**6, output_tokens=10**6)) == 3
    table.register("anthropic:claude-sonnet-4-5", input=1, output=1)
    tenth = Usage(input_tokens=100_000)
    assert table.cost("anthropic:claude-sonnet-4-5", tenth) == pytest.approx(0.1)
    assert pricing.cost("anthropic:claude-sonnet-4-5", tenth) == pytest.approx(0.3)  # other tables untouched
    table.unregister("anthropic:claude-sonnet-4-5")  # the built-in price applies again
    assert table.cost("anthropic:claude-sonnet-4-5", tenth) == pytest.approx(0.3)
    table.unregister("ollama:big-model")
    assert table.cost("ollama:big-model", Usage(input_tokens=10**6)) == 0  # the wildcard again


def test_cache_prices_default_to_the_input_price() -> None:
    price = Price(input=2, output=8)
    assert price.cost(Usage(cache_read_tokens=10**6, cache_creation_tokens=10**6)) == 4


def test_a_long_prompt_bills_the_whole_call_at_the_long_context_tier() -> None:
    sonnet = pricing.price("anthropic:claude-sonnet-4-5")
    assert sonnet is not None
    short = Usage(input_tokens=150_000, cache_read_tokens=50_000, output_tokens=1000)
    long = Usage(input_tokens=150_000, cache_read_tokens=50_001, output_tokens=1000)
    assert sonnet.cost(short) == pytest.approx((150_000 * 3 + 50_000 * 0.30 + 1000 * 15) / 1e6)
    assert sonnet.cost(long) == pytest.approx((150_000 * 6 + 50_001 * 0.60 + 1000 * 22.50) / 1e6)


def test_a_bad_price_names_the_model_and_the_rule() -> None:
    with pytest.raises(ConfigError, match=r"invalid price for 'x:y'.*non-negative"):
        PriceTable().register("x:y", input=-1, output=1)
    with pytest.raises(ConfigError, match="needs input= and output="):
        PriceTable().register("x:y", input=1)
    with pytest.raises(ConfigError, match="'provider:model'"):
        PriceTable().register("gpt-5", input=1, output=1)


def test_usage_with_tokens_but_no_cost_has_an_unknown_cost() -> None:
    # A row stored before costs were tracked, or a provider's report before pricing.
    assert Usage.model_validate_json('{"input_tokens": 5, "output_tokens": 2}').cost_usd is None
    assert Usage().cost_usd == 0
    assert (Usage(input_tokens=1, cost_usd=0.5) + Usage(input_tokens=1)).cost_usd is None
    assert (Usage(input_tokens=1, cost_usd=0.5) + Usage(output_tokens=1, cost_usd=0.25)).cost_usd == 0.75


def test_costs_are_formatted_without_pretending_to_know() -> None:
    assert pricing.format_cost(None) == "cost unknown"
    assert pricing.format_cost(0) == "$0"
    assert pricing.format_cost(0.01234) == "$0.0123"
    assert pricing.format_cost(1234.5) == "$1,234.50"


