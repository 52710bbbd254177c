"""Dollars on an agent's usage, budgets that stop a run at a round boundary, and the
cost surviving a restart (real SQLite files, the scripted provider's usage)."""

from __future__ import annotations

import pytest

from mentra_nb import (
    AgentConfig,
    BudgetExceeded,
    ConfigError,
    Runtime,
    SqliteStore,
    Usage,
    pricing,
    tool,
)
from mentra_nb.runtime import teams
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

MODEL = "anthropic:claude-sonnet-4-5"  # $3 in, $15 out, $0.30 cache read, $3.75 cache write
ANSWER_USAGE = Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=2000)
ANSWER_COST = (1000 * 3 + 100 * 15 + 2000 * 0.30) / 1e6
TOOL_CALL_COST = (10 * 3 + 5 * 15) / 1e6  # tool_use_stream reports 10 in, 5 out


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.fixture
async def make(db_path):
    runtimes: list[Runtime] = []

    def build(scripts=(), *, config=None, model=MODEL, runtime_id="rt"):
        provider = ScriptedProvider("anthropic", list(scripts))
        rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider], tools=[lookup],
                           runtime_id=runtime_id)
        runtimes.append(rt)
        return rt.spawn("writer", model, config=config), provider

    yield build
    for rt in runtimes:
        await rt.aclose()


def answer(text: str = "done"):
    return text_stream(text, usage=ANSWER_USAGE)


async def test_each_call_is_priced_and_the_cost_adds_up(make) -> None:
    agent, _ = make([answer("one"), tool_use_stream("t1", "lookup", '{"key": "a"}'), answer("two")])
    assert agent.usage.cost_usd == 0
    await agent.send("first")
    assert agent.usage.cost_usd == pytest.approx(ANSWER_COST)
    await agent.send("second")
    assert agent.usage.cost_usd == pytest.approx(2 * ANSWER_COST + TOOL_CALL_COST)
    assert agent.snapshot.usage == agent.usage


async def test_a_resumed_agent_costs_what_it_cost_before_the_restart(db_path) -> None:
    provider = ScriptedProvider("anthropic", [answer("one"), answer("two")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider], runtime_id="nb")
    agent = rt.spawn("writer", MODEL, AgentConfig(max_cost_usd=5.0, max_tokens_total=10**6))
    await agent.send("first")
    await agent.send("second")
    before = agent.usage
    await rt.aclose()

    # A new runtime on the same file, as after a kernel restart.
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic")],
                       runtime_id="nb")
    try:
        (record,) = rt.list_persisted_agents("nb")
        assert record.usage == before
        (resumed,) = rt.resume("nb")
        assert resumed.usage.cost_usd == pytest.approx(2 * ANSWER_COST)
        assert resumed.usage == before
        assert (resumed.config.max_cost_usd, resumed.config.max_tokens_total) == (5.0, 10**6)
        assert resumed.config.prompt_cache is True
    finally:
        await rt.aclose()


async def test_a_run_past_the_cost_budget_stops_before_calling_the_model(make) -> None:
    agent, provider = make([answer("one"), answer("two"), answer("three")],
                           config=AgentConfig(max_cost_usd=1.5 * ANSWER_COST))
    await agent.send("first")
    await agent.send("second")  # starts under budget; its one call ends past it
    calls = len(provider.recorded_requests())
    with pytest.raises(BudgetExceeded, match=r"past its budget .*max_cost_usd.*agent.resume\(\)"):
        await agent.send("third")
    assert len(provider.recorded_requests()) == calls  # no model call was made
    # The work so far is kept, the new message too, ready to continue.
    assert [m.text for m in agent.history] == ["first", "one", "second", "two", "third"]
    assert agent.status.name == "failed"
    stored = agent.runtime.store.load_agent(agent.id)
    assert stored.run is None and len(stored.transcript) == 5

    agent.configure(max_cost_usd=1.0)
    reply = await agent.resume()
    assert reply.text == "three"
    assert [m.text for m in agent.history] == ["first", "one", "second", "two", "third", "three"]
    assert agent.usage.cost_usd == pytest.approx(3 * ANSWER_COST)


async def test_a_run_stops_at_the_round_whose_call_would_certainly_pass_the_budget(make) -> None:
    # After the tool call the agent has spent TOOL_CALL_COST, under the budget; the
    # next call re-sends at least the 10 prompt tokens, which at the cheapest
    # (cache read) price would take it past.
    budget = TOOL_CALL_COST + 10 * 0.30 / 1e6 / 2
    agent, provider = make([tool_use_stream("t1", "lookup", '{"key": "a"}'), answer("found it")],
                           config=AgentConfig(max_cost_usd=budget))
    with pytest.raises(BudgetExceeded, match="next model call would cost at least"):
        await agent.send("look a up")
    assert len(provider.recorded_requests()) == 1
    assert agent.history[-1].tool_results[0].content == "value of a"  # the tool's work is kept
    assert agent.resumable_turn is None

    agent.configure(max_cost_usd=2 * budget + ANSWER_COST)
    reply = await agent.resume()  # continues from the tool result, no user message replayed
    assert reply.text == "found it"
    assert [m.role.value for m in agent.history] == ["user", "assistant", "user", "assistant"]


async def test_a_token_budget_stops_the_run_and_counts_cached_tokens(make) -> None:
    agent, provider = make([answer("one"), answer("two")],
                           config=AgentConfig(max_tokens_total=3000))
    await agent.send("first")
    assert agent.usage.total_tokens == 1000 + 2000 + 100  # cache reads count as tokens used
    with pytest.raises(BudgetExceeded, match=r"used 3,100 tokens.*max_tokens_total"):
        await agent.send("second")
    assert len(provider.recorded_requests()) == 1
    agent.configure(max_tokens_total=10_000)
    assert (await agent.resume()).text == "two"


async def test_a_cost_budget_on_a_model_without_a_price_refuses_to_guess(make) -> None:
    agent, provider = make([answer()], model="anthropic:claude-unpriced-1",
                           config=AgentConfig(max_cost_usd=1.0))
    with pytest.raises(BudgetExceeded, match=r"has no price.*pricing.register"):
        await agent.send("hi")
    assert provider.recorded_requests() == []
    pricing.register("anthropic:claude-unpriced-1", input=1, output=2)
    try:
        assert (await agent.resume()).text == "done"
        assert agent.usage.cost_usd == pytest.approx((1000 * 1 + 100 * 2 + 2000 * 1) / 1e6)
    finally:
        pricing.unregister("anthropic:claude-unpriced-1")


async def test_without_a_budget_an_unpriced_model_runs_and_its_cost_is_unknown(make) -> None:
    agent, _ = make([answer()], model="anthropic:claude-unpriced-2")
    await agent.send("hi")
    assert agent.usage.cost_usd is None
    assert agent.usage.output_tokens == 100


def test_configure_validates_and_persists(make) -> None:
    agent, _ = make()
    with pytest.raises(ValueError, match="max_cost_usd"):
        agent.configure(max_cost_usd=-1)
    agent.configure(max_cost_usd=0.5)
    record = agent.runtime.store.load_agent(agent.id).record
    assert AgentConfig.model_validate(record.config).max_cost_usd == 0.5



async def test_team_mail_waits_for_a_lead_stopped_by_its_budget_and_arrives_when_it_resumes(
        db_path) -> None:
    provider = ScriptedProvider("anthropic", [answer("one"), answer("read it")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider], runtime_id="team")
    try:
        lead = rt.spawn("lead", MODEL, AgentConfig(max_cost_usd=0.5 * ANSWER_COST))
        await lead.send("first")  # starts under budget, ends past it
        alice = await teams.spawn_teammate(lead, "alice", "researcher")
        teams.send_team_message(alice, "lead", "here are the sources")
        team = teams.team_of(lead)
        assert team.unread("lead", refresh=True) == 1
        with pytest.raises(BudgetExceeded):
            await lead.send("second")
        assert team.unread("lead", refresh=True) == 1
        assert not any("here are the sources" in m.text for m in lead.history)
        lead.configure(max_cost_usd=1.0)
        await lead.resume()
        assert team.unread("lead", refresh=True) == 0
        assert any("here are the sources" in m.text for m in lead.history)
    finally:
        await rt.aclose()


@pytest.mark.parametrize(("field", "value", "allowed"), [
    ("max_cost_usd", float("nan"), "a number above 0, or None"),
    ("max_cost_usd", -1, "a number above 0, or None"),
    ("max_cost_usd", 0, "a number above 0, or None"),
    ("max_tokens_total", -100_000, "a whole number above 0, or None"),
    ("max_tokens_total", 1.5, "a whole number above 0, or None"),
    ("max_rounds", 0, "a whole number at least 1 and at most 1000"),
    ("temperature", float("nan"), "a number at least 0 and at most 2, or None"),
    ("output_retries", 11, "a whole number at least 0 and at most 10"),
])
def test_a_bad_budget_or_limit_is_a_config_error_saying_what_is_allowed(field, value, allowed) -> None:
    with pytest.raises(ConfigError) as raised:
        AgentConfig(**{field: value})
    message = str(raised.value)
    assert message.startswith(f"invalid AgentConfig: {field}={value!r}: ")
    assert message.endswith(f"; it must be {allowed}")
    with pytest.raises(ConfigError, match=r"subagents: invalid SubagentLimits: max_agents=1: .*it must be "
                                          "a whole number at least 2 and at most 256"):
        AgentConfig(subagents={"max_agents": 1})


async def test_configure_with_a_bad_budget_says_what_is_allowed_and_keeps_the_old_one(make) -> None:
    agent, _ = make(config=AgentConfig(max_cost_usd=1.0))
    with pytest.raises(ConfigError, match=r"invalid config for agent 'writer': .*max_cost_usd=nan: .*"
                                          r"it must be a number above 0, or None"):
        agent.configure(max_cost_usd=float("nan"))
    assert agent.config.max_cost_usd == 1.0
