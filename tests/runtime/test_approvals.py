"""Approvals in the turn loop: a call that needs the user's yes pauses the run
until agent.approve / agent.deny; policy knobs; "always allow" in the store."""

from __future__ import annotations

import asyncio
import threading

import pytest

from mentra_nb import AgentConfig, AgentError, AgentStatus, Runtime, SqliteStore, tool
from mentra_nb.runtime._approvals import APPROVALS_STATE_KEY, PendingApproval
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT, wait_until

RAN: list[int] = []


@tool(requires_approval=True)
def drop_rows(count: int) -> str:
    """Drop rows from the table."""
    RAN.append(count)
    return f"dropped {count} rows"


@tool(read_only=True)
def peek() -> str:
    """Look without touching."""
    return "looked"


@pytest.fixture(autouse=True)
def _clear_ran():
    RAN.clear()


@pytest.fixture
async def make(db_path):
    runtimes: list[Runtime] = []

    def build(*scripts, config=None):
        provider = ScriptedProvider("anthropic", list(scripts))
        rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider], tools=[drop_rows, peek],
                           runtime_id="approvals")
        runtimes.append(rt)
        if rt.list_persisted_agents():
            return rt.resume_agent(rt.list_persisted_agents()[0].id), provider, rt
        return rt.spawn("writer", "anthropic:model", config=config), provider, rt

    yield build
    for rt in runtimes:
        await rt.aclose()


def asks_to_drop(call_id="c1", count=5):
    return tool_use_stream(call_id, "drop_rows", f'{{"count": {count}}}')


async def waiting_for(agent, call_id="c1") -> PendingApproval:
    await wait_until(lambda: any(p.tool_use_id == call_id for p in agent.snapshot.pending_approvals))
    return next(p for p in agent.snapshot.pending_approvals if p.tool_use_id == call_id)


async def test_a_call_that_needs_approval_pauses_the_run_until_approved(make):
    agent, provider, rt = make(asks_to_drop(), text_stream("done"))
    events = []
    agent.on_event(lambda e: events.append(e.type))
    send = asyncio.create_task(agent.send("clean the table"))
    pending = await waiting_for(agent)
    assert pending.tool_name == "drop_rows" and pending.input == {"count": 5}
    assert agent.snapshot.status == AgentStatus.executing_tool("c1", "drop_rows")
    assert RAN == [] and len(provider.requests) == 1
    assert "tool_approval_requested" in events and "tool_execution_started" not in events
    stored = rt.store.load_state(agent.id, APPROVALS_STATE_KEY)
    assert [p["tool_use_id"] for p in stored["pending"]] == ["c1"]  # persisted while waiting

    agent.approve("c1")
    reply = await send
    assert reply.text == "done" and RAN == [5]
    assert agent.history[2].tool_results[0].content == "dropped 5 rows"
    assert agent.snapshot.pending_approvals == []
    assert rt.store.load_state(agent.id, APPROVALS_STATE_KEY)["pending"] == []
    assert events.index("tool_approval_resolved") < events.index("tool_execution_started")


async def test_a_call_nobody_watches_says_how_to_answer_it_instead_of_waiting_in_silence(make, caplog):
    """Issue 36.1: a plain script's run stopped for an approval with no word on why."""
    agent, _, _ = make(asks_to_drop(), text_stream("done"))
    send = asyncio.create_task(agent.send("clean the table"))
    await waiting_for(agent)
    [record] = [r for r in caplog.records if "waits for your approval" in r.getMessage()]
    assert record.levelname == "WARNING" and record.name == "mentra_nb.runtime"
    assert record.getMessage() == (
        "agent 'writer' waits for your approval of drop_rows (call c1@1): answer with "
        "agent.approve('c1@1') or agent.deny('c1@1', reason); AgentConfig(auto_approve=['drop_rows']) "
        "lets it run without asking")
    agent.approve("c1@1")
    assert (await send).text == "done"


async def test_a_watched_agents_call_waits_without_a_warning(make, caplog):
    agent, _, _ = make(asks_to_drop(), text_stream("done"))
    agent.on_event(lambda event: None)  # a view follows it, and shows the call
    send = asyncio.create_task(agent.send("clean the table"))
    await waiting_for(agent)
    assert not [r for r in caplog.records if "waits for your approval" in r.getMessage()]
    agent.approve("c1")
    await send


async def test_a_denied_call_goes_back_to_the_model_as_an_error_with_the_reason(make):
    agent, provider, _ = make(asks_to_drop(), text_stream("understood"))
    send = asyncio.create_task(agent.send("clean the table"))
    await waiting_for(agent)
    agent.deny("c1", "keep every row until Friday")
    assert (await send).text == "understood"
    assert RAN == []
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error
    assert "the user denied this call of 'drop_rows', so it was not run (keep every row until Friday)" in result.content


async def test_auto_approve_runs_without_asking(make):
    agent, _, _ = make(asks_to_drop(), text_stream("done"), config=AgentConfig(auto_approve=["drop_rows"]))
    assert (await asyncio.wait_for(agent.send("go"), WAIT_LIMIT)).text == "done"
    assert RAN == [5]


async def test_tools_without_requires_approval_never_ask(make):
    agent, _, _ = make(tool_use_stream("p1", "peek", "{}"), text_stream("done"))
    events = []
    agent.on_event(lambda e: events.append(e.type))
    assert (await asyncio.wait_for(agent.send("go"), WAIT_LIMIT)).text == "done"
    assert "tool_approval_requested" not in events


async def test_always_allow_stops_asking_and_survives_a_new_runtime_on_the_same_file(make):
    agent, _, rt = make(asks_to_drop("c1", 1), asks_to_drop("c2", 2), text_stream("done"))
    send = asyncio.create_task(agent.send("go"))
    await waiting_for(agent, "c1")
    agent.approve("c1", always=True)
    assert (await asyncio.wait_for(send, WAIT_LIMIT)).text == "done"  # c2 ran without asking
    assert RAN == [1, 2] and agent.always_allowed_tools == ["drop_rows"]
    await rt.aclose()

    again, _, _ = make(asks_to_drop("c3", 3), text_stream("still allowed"))
    assert again.id == agent.id and again.always_allowed_tools == ["drop_rows"]
    assert (await asyncio.wait_for(again.send("more"), WAIT_LIMIT)).text == "still allowed"
    assert RAN == [1, 2, 3]


async def test_read_only_hides_every_tool_that_is_not_read_only(make):
    agent, provider, _ = make(text_stream("ok"), config=AgentConfig(read_only=True))
    await agent.send("hi")
    assert [t.name for t in provider.requests[0].tools] == ["peek"]


async def test_answering_a_call_that_is_not_waiting_is_a_clear_error(make):
    agent, _, _ = make(asks_to_drop(), text_stream("done"))
    with pytest.raises(AgentError, match="has no call 'nope' waiting for approval \\(waiting: none\\)"):
        agent.approve("nope")
    send = asyncio.create_task(agent.send("go"))
    await waiting_for(agent)
    with pytest.raises(AgentError, match="waiting: c1@1 \\(drop_rows\\)"):
        agent.deny("c9", "no")
    agent.approve("c1")
    with pytest.raises(AgentError, match="already answered"):
        agent.approve("c1")
    await send


async def test_cancelling_while_waiting_rolls_the_run_back_and_forgets_the_pending_call(make):
    agent, _, rt = make(asks_to_drop())
    send = asyncio.create_task(agent.send("go"))
    await waiting_for(agent)
    agent.cancel()
    with pytest.raises(asyncio.CancelledError):
        await send
    assert agent.history == [] and agent.resumable_turn is not None
    assert agent.snapshot.pending_approvals == [] and RAN == []
    assert rt.store.load_state(agent.id, APPROVALS_STATE_KEY)["pending"] == []


async def test_stop_while_waiting_denies_the_call_and_keeps_the_work(make):
    agent, provider, _ = make(asks_to_drop(), text_stream("never asked for"))
    send = asyncio.create_task(agent.send("go"))
    await waiting_for(agent)
    agent.stop()
    await asyncio.wait_for(send, WAIT_LIMIT)
    assert agent.status == AgentStatus.finished() and RAN == [] and len(provider.requests) == 1
    result = agent.history[-1].tool_results[0]
    assert result.is_error and "the user stopped the run before answering" in result.content


async def test_approve_from_another_thread_wakes_the_run_on_its_loop(make):
    agent, _, _ = make(asks_to_drop(), text_stream("done"))
    send = asyncio.create_task(agent.send("go"))
    await waiting_for(agent)
    worker = threading.Thread(target=agent.approve, args=("c1",))
    worker.start()
    worker.join()
    assert (await asyncio.wait_for(send, WAIT_LIMIT)).text == "done" and RAN == [5]


async def test_calls_of_one_round_are_asked_one_at_a_time_in_call_order(make):
    two = tool_use_stream("c1", "drop_rows", '{"count": 1}', calls=[("c2", "drop_rows", '{"count": 2}')])
    agent, _, _ = make(two, text_stream("done"))
    send = asyncio.create_task(agent.send("go"))
    await waiting_for(agent, "c1")
    assert [p.tool_use_id for p in agent.snapshot.pending_approvals] == ["c1"]
    agent.deny("c1")
    await waiting_for(agent, "c2")
    agent.approve("c2")
    await asyncio.wait_for(send, WAIT_LIMIT)
    assert RAN == [2]
    results = agent.history[2].tool_results
    assert [r.is_error for r in results] == [True, False]
    assert "(no reason given)" in results[0].content


async def test_an_approval_bound_to_a_run_never_approves_another_runs_call(make):
    """Issue 14.9: call ids repeat across runs (some servers number them from 0);
    `c1@1` names run 1's call, so re-running an old approve cell is refused."""
    agent, _provider, _rt = make(asks_to_drop("c1", 1), text_stream("done"),
                                 asks_to_drop("c1", 2), text_stream("done again"))
    first = asyncio.ensure_future(agent.send("drop one"))
    pending = await waiting_for(agent)
    assert pending.reference == "c1@1"
    agent.approve(pending.reference)
    assert (await first).text == "done"
    second = asyncio.ensure_future(agent.send("drop two"))
    pending = await waiting_for(agent)
    assert pending.reference == "c1@2"
    with pytest.raises(AgentError, match=r"call 'c1' of run 1 is no longer waiting.*c1@2 \(drop_rows\)"):
        agent.approve("c1@1")  # the old cell, re-run
    assert [p.reference for p in agent.snapshot.pending_approvals] == ["c1@2"]
    agent.deny("c1@2", "not now")
    assert (await second).text == "done again"
    assert RAN == [1]
