"""spending(agent): an agent's own calls, its team's and its subagent tree's."""

from __future__ import annotations

import asyncio
import json

import pytest

from mentra_nb import AgentConfig, Runtime, SqliteStore, Usage, pricing
from mentra_nb.runtime import spending, spending_from_records
from mentra_nb.runtime.subagents import SubagentLimits
from mentra_nb.store.base import AgentRecord
from mentra_nb.testing import text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT
from tests.subagents.helpers import RoutedProvider, call


def record(id: str, kind: str = "agent", parent: str | None = None, cost: float | None = 1.0,
           tokens: int = 10) -> AgentRecord:
    return AgentRecord(id=id, runtime_id="rt", name=id, model="m", kind=kind, parent_id=parent,
                       usage=Usage(input_tokens=tokens, cost_usd=cost))


def test_members_are_summed_by_who_started_them() -> None:
    records = [
        record("lead"), record("other", cost=100.0),
        record("alice", "teammate", "lead", cost=2.0),
        record("alice-helper", "subagent", "alice", cost=4.0),  # started by the team: team money
        record("child", "subagent", "lead", cost=8.0),
        record("grandchild", "subagent", "child", cost=16.0),
    ]
    spent = spending_from_records(records, "lead")
    assert (spent.agent.cost_usd, spent.team.cost_usd, spent.subagents.cost_usd) == (1.0, 6.0, 24.0)
    assert spent.total.cost_usd == 31.0 and spent.total.input_tokens == 50
    assert spent.members == 4


def test_one_unpriced_member_makes_the_total_unknown() -> None:
    records = [record("lead"), record("child", "subagent", "lead", cost=None)]
    spent = spending_from_records(records, "lead")
    assert spent.agent.cost_usd == 1.0
    assert spent.subagents.cost_usd is None and spent.total.cost_usd is None


@pytest.fixture
def priced_models():
    for model in ("anthropic:root", "anthropic:child_a"):
        pricing.register(model, input=1.0, output=2.0)
    yield
    for model in ("anthropic:root", "anthropic:child_a"):
        pricing.unregister(model)


async def test_a_root_costs_its_calls_plus_its_subagents(db_path, priced_models) -> None:
    spawn = ("s1", "spawn_agent", json.dumps({"task_name": "child_a", "message": "Summarise A",
                                              "model": "anthropic:child_a"}))
    provider = RoutedProvider(
        root=[tool_use_stream(*spawn), call("w1", "wait_agent"), text_stream("done")],
        child_a=[text_stream("A: fine", usage=Usage(input_tokens=300, output_tokens=20))],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    try:
        root = rt.spawn("lead", "anthropic:root",
                        config=AgentConfig(subagents=SubagentLimits(max_agents=4, max_concurrency=2)))
        await asyncio.wait_for(root.send("Summarise A"), WAIT_LIMIT)
        spent = spending(root)
        assert spent.agent == root.usage
        assert spent.subagents.cost_usd == pytest.approx((300 * 1.0 + 20 * 2.0) / 1e6)
        assert spent.team == Usage()
        assert spent.total.cost_usd == pytest.approx(root.usage.cost_usd + spent.subagents.cost_usd)
    finally:
        await rt.aclose()
