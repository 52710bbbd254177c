"""Issue 33: budgets against hostile usage reports, fuzzed with hypothesis. A server
(a real HTTP server on 127.0.0.1 speaking each provider's SSE) reports any usage it
likes: negative, NaN, infinite, huge, fractional, strings, booleans, missing fields, no
usage at all. Whatever it reports, through the provider's real parse into a real agent
on a real SQLite file:

- what the agent has spent never decreases, is never negative, and its cost, once
  unknown, stays unknown;
- a model call starts only while what is known to be spent is under every budget and
  no earlier call was misreported; once spending reaches a budget (or is misreported)
  the next send stops with `BudgetExceeded` before calling the model.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mentra_nb import AgentConfig, BudgetExceeded, Runtime, SqliteStore, Usage
from mentra_nb.providers.anthropic import AnthropicProvider
from mentra_nb.providers.gemini import GeminiProvider
from mentra_nb.providers.openai import OpenAIProvider
from mentra_nb.providers.openai_chat import OpenAIChatProvider
from tests.providers.conftest import FAST_RETRY, Stream, WireServer
from tests.providers.sse_bodies import USAGE_FIELDS, sse_body

pytestmark = pytest.mark.reliability

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

PROVIDERS = {"openai-chat": (OpenAIChatProvider, "gpt-4o-mini"), "openai": (OpenAIProvider, "gpt-4o-mini"),
             "gemini": (GeminiProvider, "gemini-2.5-flash"), "anthropic": (AnthropicProvider, "claude-haiku-4-5")}
MISSING = object()

COUNTS = st.one_of(
    st.integers(0, 200_000),                                      # possible
    st.integers(-10**12, -1),                                     # negative
    st.integers(10**8, 10**30),                                   # absurd
    st.floats(allow_nan=True, allow_infinity=True),               # NaN, ±inf, fractions
    st.sampled_from(["12", "-5", "abc", "", "1e9", True, False, None, [], {"n": 1}]),
    st.just(MISSING),                                             # the field left out
)
REPORTS = st.one_of(
    st.tuples(COUNTS, COUNTS),                                    # (prompt, output) counts
    st.sampled_from([None, "lots", [1, 2]]),                      # no usage, or not an object
)


def _usage_object(provider: str, report: Any) -> Any:
    if not isinstance(report, tuple):
        return report
    fields = USAGE_FIELDS[provider]
    return {name: value for name, value in zip(fields, report, strict=True) if value is not MISSING}


def _check_spending_only_grows(before: Usage, after: Usage) -> None:
    for field in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                  "misreported_calls"):
        assert 0 <= getattr(before, field) <= getattr(after, field), (field, before, after)
    if before.cost_usd is None:
        assert after.cost_usd is None, (before, after)  # unknown stays unknown
    elif after.cost_usd is not None:
        assert math.isfinite(after.cost_usd) and 0 <= before.cost_usd <= after.cost_usd, (before, after)


def _over_budget(spent: Usage, config: AgentConfig) -> bool:
    """Whether a budget certainly forbids another call (the agent may stop earlier)."""
    if spent.misreported_calls and (config.max_cost_usd is not None or config.max_tokens_total is not None):
        return True
    if config.max_tokens_total is not None and spent.total_tokens >= config.max_tokens_total:
        return True
    return config.max_cost_usd is not None and (spent.cost_usd is None or spent.cost_usd >= config.max_cost_usd)


def _run(server: WireServer, provider: str, reports: list[Any], config: AgentConfig) -> None:
    kind, model = PROVIDERS[provider]

    async def go() -> None:
        with tempfile.TemporaryDirectory() as folder:
            store = SqliteStore(Path(folder) / "state.sqlite")
            async with httpx.AsyncClient() as client:
                rt = Runtime.empty(store=store, providers=[
                    kind(api_key="k", base_url=server.url, client=client, retry=FAST_RETRY)])
                try:
                    agent = rt.spawn("a", f"{provider}:{model}", config)
                    for report in reports:
                        server.queue(Stream(sse_body(provider, "ok", _usage_object(provider, report))))
                    stopped = False
                    for turn in range(len(reports)):
                        before, calls = agent.usage, len(server.requests)
                        try:
                            await asyncio.wait_for(agent.send(f"turn {turn}"), 60)
                        except BudgetExceeded:
                            stopped = True
                        called = len(server.requests) > calls
                        _check_spending_only_grows(before, agent.usage)
                        if _over_budget(before, config):
                            assert stopped and not called, (before, config)  # budgets always stop
                        if called:
                            assert not _over_budget(before, config), (before, config)
                        if stopped:
                            assert not called, "a stopped run called the model"
                            break
                finally:
                    await rt.aclose()
                    store.close()
            # What was stored reads back as it was spent.
            reread = SqliteStore(Path(folder) / "state.sqlite")
            try:
                [record] = reread.list_agents()
                assert record.usage == agent.usage
            finally:
                reread.close()

    asyncio.run(go())


@FUZZ
@given(provider=st.sampled_from(list(PROVIDERS)), reports=st.lists(REPORTS, min_size=1, max_size=5),
       cost=st.one_of(st.none(), st.floats(1e-6, 0.05)), tokens=st.one_of(st.none(), st.integers(1, 300_000)))
def test_hostile_usage_never_lowers_spending_and_budgets_always_stop(provider, reports, cost, tokens) -> None:
    server = WireServer()  # one per example: what a stopped run left queued goes with it
    try:
        _run(server, provider, reports, AgentConfig(max_cost_usd=cost, max_tokens_total=tokens))
    finally:
        server.close()
