"""`AgentState`: each named operation writes to the store first, then notifies
observers once (one snapshot, and the events that say what happened)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from mentra_nb import (
    Agent,
    AgentEvent,
    AgentSnapshot,
    AgentStatus,
    Message,
    Runtime,
    SqliteStore,
    StoreError,
    Usage,
)
from mentra_nb.testing import ScriptedProvider


class Watched(NamedTuple):
    agent: Agent
    snapshots: list[AgentSnapshot]
    events: list[AgentEvent]


@pytest.fixture
async def watched(db_path):
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic")])
    agent = rt.spawn("writer", "anthropic:model")
    seen = Watched(agent, [], [])
    agent.on_snapshot(seen.snapshots.append)
    agent.on_event(seen.events.append)
    yield seen
    await rt.aclose()


def stored(agent):
    return agent.services.store.load_agent(agent.id)


async def test_begin_run_persists_the_opening_and_notifies_once(watched):
    agent = watched.agent
    baseline = await agent.state.begin_run([Message.user("hello")])
    assert baseline == 0
    assert stored(agent).transcript == [Message.user("hello")]
    assert stored(agent).run.generation == 1
    assert [s.status for s in watched.snapshots] == [AgentStatus.awaiting_model()]
    assert [e.type for e in watched.events] == ["run_started"]
    assert agent.state.run_generation == 1 and agent.state.history_len == 1


async def test_commit_assistant_adds_usage_and_publishes_one_snapshot(watched):
    agent = watched.agent
    await agent.state.begin_run([Message.user("hello")])
    watched.snapshots.clear()
    agent.state.live_parts("text").append("Hi")
    await agent.state.commit_assistant(Message.assistant("Hi"), Usage(output_tokens=2),
                                 AgentStatus.finished(), final=True)
    assert stored(agent).transcript[-1] == Message.assistant("Hi") and stored(agent).run is None
    assert stored(agent).record.usage == Usage(output_tokens=2) == agent.state.usage
    assert len(watched.snapshots) == 1
    assert watched.snapshots[0].current_text == "" and watched.snapshots[0].history_len == 2
    assert [e.type for e in watched.events][-2:] == ["assistant_message_committed", "usage_reported"]


async def test_roll_back_returns_to_the_baseline_keeps_the_opening_and_notifies_once(watched):
    agent = watched.agent
    opening = Message.user("hello")
    baseline = await agent.state.begin_run([opening])
    agent.state.live_parts("text").append("half a reply")
    watched.snapshots.clear()
    await agent.state.roll_back(baseline, AgentStatus.idle(), opening)
    assert stored(agent).transcript == [] and stored(agent).resumable_turn == opening
    assert agent.state.transcript == [] and agent.state.resumable_turn == opening
    assert [(s.status, s.current_text) for s in watched.snapshots] == [(AgentStatus.idle(), "")]
    assert not agent.state.stale


async def test_a_roll_back_the_store_refuses_leaves_the_state_stale(watched, monkeypatch):
    agent = watched.agent
    opening = Message.user("hello")
    baseline = await agent.state.begin_run([opening])
    store = agent.services.store

    def refuse(*args, **kwargs):
        raise StoreError("disk full")

    monkeypatch.setattr(store, "rollback_run", refuse)
    await agent.state.roll_back(baseline, AgentStatus.failed("boom"), opening)
    assert agent.state.stale
    assert agent.state.transcript == [] and agent.state.status == AgentStatus.failed("boom")
    assert stored(agent).transcript == [opening]  # the store still holds the run
    monkeypatch.undo()
    agent.sync_with_store()  # recovery, as before the agent's next run
    assert not agent.state.stale
    assert stored(agent).run is None and agent.state.status == AgentStatus.interrupted()
