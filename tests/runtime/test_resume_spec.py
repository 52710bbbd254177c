"""The non-team resume tests of spec/000 (mentra's runtime), ported.

A crash is simulated the way the Rust tests abort a task: the first runtime's
run is left frozen mid-flight (it never finishes, never rolls back), the
leases are cleared, and a second runtime opens the same file.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3

import pytest

from mentra_nb import (
    INTERRUPTED_TOOL_RESULT,
    AgentStatus,
    ContentBlock,
    ContentBlockDelta,
    ContentBlockStarted,
    Message,
    MessageStarted,
    NoResumableTurn,
    Runtime,
    SqliteStore,
    ToolResultBlock,
    ToolUseBlock,
    tool,
)
from mentra_nb.testing import ScriptedProvider, controlled_stream, text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT, clear_leases, wait_for_status, wait_until


def reboot(db_path, *scripts, runtime_id="default", tools=()) -> Runtime:
    return Runtime.empty(
        store=SqliteStore(db_path),
        providers=[ScriptedProvider("anthropic", list(scripts))],
        runtime_id=runtime_id,
        tools=tools,
    )


async def test_startup_keeps_the_pending_turn_until_resume_and_resume_rolls_it_back(db_path):
    script, control = controlled_stream()
    runtime = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic", [script])])
    agent = runtime.spawn("agent", "anthropic:model")
    watch = agent.watch()
    send = asyncio.create_task(agent.send([ContentBlock.text("hello")]))

    # As spec/000: the agent is streaming once the request is made, before any event.
    await wait_for_status(watch, AgentStatus.streaming())
    control.send(MessageStarted(id="msg-1", model="model"))
    assert (await anext(watch)).status == AgentStatus.streaming()
    control.send(ContentBlockStarted.text(0))
    await anext(watch)
    control.send(ContentBlockDelta.text(0, "Hel"))
    assert (await anext(watch)).current_text == "Hel"

    def checkpointed() -> bool:
        pending = runtime.store.load_agent(agent.id).pending_turn
        return pending is not None and pending.current_text == "Hel"

    await wait_until(checkpointed)  # the first checkpoint comes a second in
    # The kernel dies here: nothing more happens in the first runtime.
    clear_leases(db_path)
    rebooted = reboot(db_path)
    before = rebooted.store.load_agent(agent.id)
    assert before is not None and before.pending_turn is not None
    assert before.pending_turn.current_text == "Hel"

    resumed = rebooted.resume_agent(agent.id)
    assert resumed.history == []
    assert resumed.snapshot.status == AgentStatus.interrupted()
    assert resumed.snapshot.current_text == ""
    after = rebooted.store.load_agent(agent.id)
    assert after.pending_turn is None
    assert after.run is None
    assert after.transcript == []
    assert after.resumable_turn == Message.user("hello")

    # The frozen run, cancelled at last, must not touch what the new runtime owns.
    send.cancel()
    with pytest.raises(asyncio.CancelledError):
        await send
    assert rebooted.store.load_agent(agent.id) == after
    await rebooted.aclose()


async def test_resume_keeps_the_committed_transcript_when_a_tool_was_interrupted(db_path):
    started, release = asyncio.Event(), asyncio.Event()

    @tool(read_only=True)
    async def blocking_tool(value: str) -> str:
        """Blocks until released."""
        started.set()
        await release.wait()
        return "released"

    provider = ScriptedProvider("anthropic", [tool_use_stream("tool-1", "blocking_tool", '{"value":"hi"}')])
    runtime = Runtime.empty(store=SqliteStore(db_path), providers=[provider], tools=[blocking_tool])
    agent = runtime.spawn("agent", "anthropic:model")
    send = asyncio.create_task(agent.send([ContentBlock.text("hello")]))
    await asyncio.wait_for(started.wait(), WAIT_LIMIT)
    assert agent.snapshot.status == AgentStatus.executing_tool("tool-1", "blocking_tool")

    clear_leases(db_path)
    store = SqliteStore(db_path)
    before = store.load_agent(agent.id)
    assert before.pending_turn is None
    assert before.run is not None and before.run.assistant_committed

    rebooted = Runtime.empty(store=store, providers=[ScriptedProvider("anthropic")], tools=[blocking_tool])
    resumed = rebooted.resume_agent(agent.id)
    assert resumed.snapshot.status == AgentStatus.interrupted()
    history = resumed.history
    assert history[0] == Message.user(ContentBlock.text("hello"))
    assert isinstance(history[1].content[0], ToolUseBlock)
    assert history[1].content[0].name == "blocking_tool"
    # Providers reject a tool call without a result, so recovery pairs it with one.
    assert history[2] == Message.user(
        ToolResultBlock(tool_use_id="tool-1", content=INTERRUPTED_TOOL_RESULT, is_error=True)
    )
    after = store.load_agent(agent.id)
    assert after.run is None
    assert len(after.transcript) == 3

    send.cancel()
    await asyncio.gather(send, return_exceptions=True)
    await rebooted.aclose()


async def test_resume_all_rebuilds_agents_from_their_stored_memory(db_path):
    runtime = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic", [text_stream("done")])])
    agent = runtime.spawn("agent", "anthropic:model")
    await agent.send([ContentBlock.text("hello")])
    clear_leases(db_path)

    rebooted = reboot(db_path)
    resumed = rebooted.resume_all()
    assert len(resumed) == 1
    assert resumed[0].id == agent.id
    assert len(resumed[0].history) == 2
    assert resumed[0].last_message == Message.assistant(ContentBlock.text("done"))
    await runtime.aclose()
    await rebooted.aclose()


async def test_resume_filters_agents_by_runtime_identifier(db_path):
    runtime_a = Runtime.empty(store=SqliteStore(db_path), runtime_id="session-a",
                              providers=[ScriptedProvider("anthropic")])
    agent_a = runtime_a.spawn("agent-a", "anthropic:model")
    runtime_b = Runtime.empty(store=SqliteStore(db_path), runtime_id="session-b",
                              providers=[ScriptedProvider("anthropic")])
    runtime_b.spawn("agent-b", "anthropic:model")
    clear_leases(db_path)

    rebooted = reboot(db_path, runtime_id="session-a")
    resumed = rebooted.resume("session-a")
    assert [(a.id, a.name) for a in resumed] == [(agent_a.id, "agent-a")]
    for rt in (runtime_a, runtime_b, rebooted):
        await rt.aclose()


async def test_dropping_the_runtime_releases_the_agent_lease_for_the_next_resume(db_path):
    runtime = Runtime.empty(store=SqliteStore(db_path), runtime_id="lease-release",
                            providers=[ScriptedProvider("anthropic", [text_stream("done")])])
    agent = runtime.spawn("agent", "anthropic:model")
    agent_id = agent.id
    await agent.send([ContentBlock.text("hello")])
    assert _lease_count(db_path) == 1

    del agent, runtime
    gc.collect()
    assert _lease_count(db_path) == 0

    rebooted = reboot(db_path, runtime_id="lease-release")
    resumed = rebooted.resume("lease-release")
    assert [a.id for a in resumed] == [agent_id]
    await rebooted.aclose()
    assert _lease_count(db_path) == 0


async def test_resume_replays_the_rolled_back_user_turn(db_path):
    script, control = controlled_stream()
    runtime = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic", [script])])
    agent = runtime.spawn("agent", "anthropic:model")
    send = asyncio.create_task(agent.send("hello"))
    control.send(MessageStarted())
    control.send(ContentBlockStarted.text(0))
    control.send(ContentBlockDelta.text(0, "Hel"))
    await wait_until(lambda: agent.snapshot.current_text == "Hel")
    clear_leases(db_path)

    rebooted = reboot(db_path, text_stream("Hello again"))
    resumed = rebooted.resume_agent(agent.id)
    assert resumed.resumable_turn == Message.user("hello")
    reply = await resumed.resume()
    assert reply == Message.assistant("Hello again")
    assert resumed.history == [Message.user("hello"), Message.assistant("Hello again")]
    assert resumed.snapshot.status == AgentStatus.finished()
    stored = rebooted.store.load_agent(agent.id)
    assert stored.resumable_turn is None
    assert stored.transcript == resumed.history
    with pytest.raises(NoResumableTurn, match="no interrupted turn"):
        await resumed.resume()

    send.cancel()
    await asyncio.gather(send, return_exceptions=True)
    await rebooted.aclose()


async def test_resume_continues_a_run_whose_tool_call_was_interrupted(db_path):
    started = asyncio.Event()

    @tool
    async def slow(value: str) -> str:
        """Never finishes in the first runtime."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    runtime = Runtime.empty(store=SqliteStore(db_path), tools=[slow],
                            providers=[ScriptedProvider("anthropic", [tool_use_stream("t1", "slow", '{"value":"x"}')])])
    agent = runtime.spawn("agent", "anthropic:model")
    send = asyncio.create_task(agent.send("go"))
    await asyncio.wait_for(started.wait(), WAIT_LIMIT)
    clear_leases(db_path)

    rebooted = reboot(db_path, text_stream("The tool was interrupted, so I stopped."), tools=[slow])
    resumed = rebooted.resume_agent(agent.id)
    reply = await resumed.resume()
    assert reply.text == "The tool was interrupted, so I stopped."
    request = rebooted.providers.get("anthropic").requests[-1]
    assert request.messages[-1].tool_results[0].content == INTERRUPTED_TOOL_RESULT
    assert len(resumed.history) == 4

    send.cancel()
    await asyncio.gather(send, return_exceptions=True)
    await rebooted.aclose()


def _lease_count(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM leases").fetchone()[0]
    finally:
        conn.close()


class CountingStore(SqliteStore):
    """A real SqliteStore that counts transcript reads, and the messages read."""

    transcript_reads = 0
    messages_read = 0

    def load_messages(self, agent_id, start=0, end=None):
        self.transcript_reads += 1
        messages = super().load_messages(agent_id, start, end)
        self.messages_read += len(messages)
        return messages


async def _resumed_after_three_turns(db_path):
    """An agent's three question/answer turns, resumed by a new runtime on a
    CountingStore whose model answers "more" next: (store, runtime, agent)."""
    runtime = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider(
        "anthropic", [text_stream(f"answer {i}") for i in range(3)])])
    agent = runtime.spawn("agent", "anthropic:model")
    for i in range(3):
        await agent.send(f"question {i}")
    await runtime.aclose()

    store = CountingStore(db_path)
    rebooted = Runtime.empty(store=store, providers=[ScriptedProvider("anthropic", [text_stream("more")])])
    [resumed] = rebooted.resume()
    return store, rebooted, resumed


async def test_resume_loads_a_transcript_only_when_it_is_first_needed(db_path):
    store, rebooted, resumed = await _resumed_after_three_turns(db_path)
    assert store.transcript_reads == 0
    assert resumed.snapshot.history_len == 6
    assert resumed.last_message == Message.assistant("answer 2")
    assert resumed.recent_messages(2) == [Message.user("question 2"), Message.assistant("answer 2")]
    assert store.messages_read == 3  # the tail only, twice; the transcript stays unloaded
    await resumed.send("question 3")
    assert store.messages_read == 3 + 6 and len(resumed.history) == 8
    assert resumed.last_message == Message.assistant("more") and store.messages_read == 9
    await rebooted.aclose()


async def test_the_tail_of_an_unloaded_transcript_is_read_once_for_shorter_reads(db_path):
    """Issue 32: a resumed view read the last page, then its markdown read the last
    40 messages again, for each of fifty views."""
    store, rebooted, resumed = await _resumed_after_three_turns(db_path)
    assert resumed.recent_messages(4) == [Message.user("question 1"), Message.assistant("answer 1"),
                                          Message.user("question 2"), Message.assistant("answer 2")]
    assert resumed.recent_messages(3)[0] == Message.assistant("answer 1")
    assert resumed.recent_messages(10)[0] == Message.user("question 0")  # all six there are
    assert resumed.recent_messages(6)[-1] == Message.assistant("answer 2")
    assert store.transcript_reads == 2
    # Once the transcript changes, reads follow it.
    await resumed.send("question 3")
    assert resumed.recent_messages(2) == [Message.user("question 3"), Message.assistant("more")]
    await rebooted.aclose()


async def test_resuming_many_agents_reads_the_agent_table_a_fixed_number_of_times(db_path):
    class ListCountingStore(SqliteStore):
        lists = 0

        def list_agents(self, runtime_id=None, **kwargs):
            self.lists += 1
            return super().list_agents(runtime_id, **kwargs)

    runtime = Runtime.empty(store=SqliteStore(db_path), providers=[ScriptedProvider("anthropic", [])])
    for i in range(25):
        runtime.spawn(f"agent{i}", "anthropic:model")
    await runtime.aclose()

    store = ListCountingStore(db_path)
    rebooted = Runtime.empty(store=store, providers=[ScriptedProvider("anthropic", [])])
    assert len(rebooted.resume()) == 25
    assert store.lists <= 3  # not one per agent: resuming was quadratic in the agent count
    await rebooted.aclose()
