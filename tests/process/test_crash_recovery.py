"""Recovery across a real process boundary: a child process is SIGKILLed in
each phase, and this process (which never had the file open) resumes it.
No leases are cleared by hand: the dead child's lease is taken over because
its process is gone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mentra_nb import (
    INTERRUPTED_TOOL_RESULT,
    AgentStatus,
    LeaseUnavailable,
    Message,
    Runtime,
    SqliteStore,
    ToolResultBlock,
)
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.children import Child, integrity

pytestmark = pytest.mark.process


@pytest.fixture
def child(db_path, children):
    """start(phase) -> (child, agent id): a process that drives an agent into `phase`."""

    def start(phase: str) -> tuple[Child, str]:
        process = Child("tests.process.crash_child", str(db_path), phase)
        children.append(process)
        [agent_id] = process.ready()
        return process, agent_id

    return start


def _fresh_runtime(db_path: Path, *scripts) -> Runtime:
    return Runtime.empty(store=SqliteStore(db_path), runtime_id="crash",
                         providers=[ScriptedProvider("anthropic", list(scripts))])


async def test_killed_mid_stream_rolls_back_to_the_committed_turns(child, db_path):
    proc, agent_id = child("streaming")
    proc.kill()
    assert integrity(db_path) == "ok"

    rt = _fresh_runtime(db_path, text_stream("second answer"))
    before = rt.store.load_agent(agent_id)
    assert before.pending_turn.current_text == "Hel"
    [agent] = rt.resume()
    assert agent.id == agent_id
    assert agent.snapshot.status == AgentStatus.interrupted()
    assert agent.history == [Message.user("first"), Message.assistant("first answer")]
    assert agent.resumable_turn == Message.user("second")
    assert rt.store.load_agent(agent_id).pending_turn is None
    assert (await agent.resume()).text == "second answer"
    assert len(rt.store.load_agent(agent_id).transcript) == 4
    await rt.aclose()


async def test_killed_inside_a_tool_keeps_the_call_and_answers_it_with_an_error(child, db_path):
    proc, agent_id = child("tool")
    proc.kill()
    assert integrity(db_path) == "ok"

    rt = _fresh_runtime(db_path)
    [agent] = rt.resume()
    assert agent.snapshot.status == AgentStatus.interrupted()
    history = agent.history
    assert history[:3] == [Message.user("first"), Message.assistant("first answer"), Message.user("second")]
    assert history[3].tool_uses[0].name == "blocking_tool"
    assert history[4] == Message.user(
        ToolResultBlock(tool_use_id="tool-1", content=INTERRUPTED_TOOL_RESULT, is_error=True))
    assert rt.store.load_agent(agent_id).run is None
    await rt.aclose()


async def test_killed_while_idle_changes_nothing(child, db_path):
    proc, agent_id = child("idle")
    proc.kill()
    rt = _fresh_runtime(db_path)
    [agent] = rt.resume()
    assert agent.snapshot.status == AgentStatus.finished()
    assert agent.history == [Message.user("first"), Message.assistant("first answer")]
    await rt.aclose()


async def test_a_second_process_gets_lease_unavailable_until_the_first_dies(child, db_path):
    proc, agent_id = child("idle")
    rt = _fresh_runtime(db_path)
    before = rt.store.load_agent(agent_id)
    with pytest.raises(LeaseUnavailable, match=f"pid {proc.pid} on .*Stop that kernel") as info:
        rt.resume()
    assert info.value.holder.pid == proc.pid
    assert rt.store.load_agent(agent_id) == before
    assert integrity(db_path) == "ok"

    proc.kill()
    [agent] = rt.resume()  # taken over at once: the holder's process is gone
    assert agent.id == agent_id
    assert rt.store.lease_holder(agent_id).pid == os.getpid()
    await rt.aclose()
