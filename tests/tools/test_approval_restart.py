"""A pending approval across a SIGKILLed process: the call comes back answered
"not run: it was waiting for approval when the kernel stopped", the agent is
interrupted, and agent.resume() continues the turn."""

from __future__ import annotations

import pytest

from mentra_nb import AgentStatus, Message, Runtime, SqliteStore, ToolResultBlock, tool
from mentra_nb.runtime._approvals import APPROVAL_INTERRUPTED_RESULT, APPROVALS_STATE_KEY
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.children import Child, integrity

pytestmark = pytest.mark.process


@tool(requires_approval=True)
def drop_rows(count: int) -> str:
    """Drop rows."""
    return f"dropped {count} rows"


@pytest.fixture
def waiting_child(db_path, children):
    process = Child("tests.tools.approval_child", str(db_path))
    children.append(process)
    [agent_id] = process.ready()
    return process, agent_id


async def test_a_call_waiting_for_approval_is_marked_not_run_after_a_kill(waiting_child, db_path):
    proc, agent_id = waiting_child
    store = SqliteStore(db_path)
    assert [p["tool_use_id"] for p in store.load_state(agent_id, APPROVALS_STATE_KEY)["pending"]] == ["call-1"]
    proc.kill()
    assert integrity(db_path) == "ok"

    provider = ScriptedProvider("anthropic", [text_stream("I will not drop anything then")])
    rt = Runtime.empty(store=store, runtime_id="approvals", tools=[drop_rows], providers=[provider])
    [agent] = rt.resume()
    assert agent.id == agent_id
    assert agent.snapshot.status == AgentStatus.interrupted()
    assert agent.snapshot.pending_approvals == []
    history = agent.history
    assert history[3].tool_uses[0].name == "drop_rows"
    assert history[4] == Message.user(
        ToolResultBlock(tool_use_id="call-1", content=APPROVAL_INTERRUPTED_RESULT, is_error=True))
    assert store.load_state(agent_id, APPROVALS_STATE_KEY)["pending"] == []

    reply = await agent.resume()  # continues the turn: the model reads the "not run" result
    assert reply.text == "I will not drop anything then"
    assert provider.requests[0].messages[-1].tool_results[0].content == APPROVAL_INTERRUPTED_RESULT
    assert agent.snapshot.status == AgentStatus.finished()
    await rt.aclose()
