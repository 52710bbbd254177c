"""What the tree says about a child while it works (as the spec's monitor
keeps it): `last_message` at each committed message, cleared when a turn
starts, the reason when a turn is interrupted; a finish reported twice counts
once; `wait_agent` names senders in sorted order; `fork_turns` in any case."""

from __future__ import annotations

import json

from mentra_nb import (
    AgentConfig,
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    Message,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    Runtime,
    SqliteStore,
    Usage,
)
from mentra_nb.runtime.subagents import SubagentLimits, list_subagents
from mentra_nb.testing import controlled_stream, ok_stream, text_stream
from tests.conftest import wait_until
from tests.subagents.helpers import RoutedProvider, finish_text, run_tool, standalone_registry

DELEGATE = AgentConfig(subagents=SubagentLimits(max_agents=8, max_concurrency=4))


def text_then_tool(text: str, tool_id: str, tool: str) -> object:
    """An assistant message with text and a tool call (a model thinking aloud)."""
    return ok_stream([
        MessageStarted(id=f"msg-{tool_id}", model="model"),
        ContentBlockStarted.text(0), ContentBlockDelta.text(0, text), ContentBlockStopped(index=0),
        ContentBlockStarted.tool_use(1, tool_id, tool), ContentBlockDelta.tool_input_json(1, "{}"),
        ContentBlockStopped(index=1),
        MessageDelta(stop_reason="tool_use", usage=Usage(input_tokens=5, output_tokens=5)),
        MessageStopped(),
    ])


def last_message(root) -> tuple[str, str | None]:
    [info] = list_subagents(root)
    return info.status, info.last_message


async def test_list_agents_follows_a_child_turn_by_turn(db_path):
    working, control = controlled_stream()
    provider = RoutedProvider(child=[text_then_tool("Reading the data", "t1", "list_agents"), working])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    await run_tool(root, "spawn_agent", task_name="reader", message="Read it", model="anthropic:child")

    # While it still runs, its committed message is what list_agents reports.
    await wait_until(lambda: len(provider.requests("child")) == 2)
    assert last_message(root) == ("running", "Reading the data")
    [listed] = json.loads(await run_tool(root, "list_agents"))
    assert listed["last_message"] == "Reading the data"
    finish_text(control, "Read 3 files")
    await wait_until(lambda: last_message(root) == ("completed", "Read 3 files"))

    # A follow-up starts a new turn: the previous run's text is no longer news.
    again, again_control = controlled_stream()
    provider.add("child", again)
    await run_tool(root, "followup_task", target="reader", message="And the fourth?")
    await wait_until(lambda: len(provider.requests("child")) == 3)
    assert last_message(root) == ("running", None)

    # An interrupt says why the turn ended instead of keeping old text.
    await run_tool(root, "interrupt_agent", target="reader")
    status, text = last_message(root)
    assert status == "interrupted"
    assert text is not None and text.startswith("interrupted: its turn was stopped")
    again_control.close()
    await rt.aclose()


def test_a_finish_reported_twice_counts_once(db_path):
    registry, root_id, store, _events, _rt = standalone_registry(
        db_path, SubagentLimits(max_concurrency=2, max_agents=4))
    registry.reserve(root_id, "/root/a", "/root", "id-a", 1, "anthropic:m")
    registry.finished(root_id, "/root/a", "completed", "result")
    writes = store.state_saves

    registry.finished(root_id, "/root/a", "errored", "late failure report")

    assert [(r["status"], r["last_message"]) for r in registry.list(root_id)] == [("completed", "result")]
    assert [(m.kind, m.status, m.text) for m in registry.pending_mail(root_id)] == [
        ("update", "completed", "result")]
    assert store.state_saves == writes  # nothing changed, nothing written


async def test_wait_agent_names_senders_in_sorted_order(db_path):
    registry, root_id, _store, _events, _rt = standalone_registry(
        db_path, SubagentLimits(max_concurrency=4, max_agents=4))
    for path in ("/root/b", "/root/c", "/root/a"):
        registry.reserve(root_id, path, "/root", f"id-{path}", 1, "anthropic:m")
    for sender in ("/root/c", "/root/a", "/root/b", "/root/a"):
        registry.queue_message(root_id, sender, "/root", f"from {sender}")

    assert await registry.wait(root_id, "/root", 1.0) == ["/root/a", "/root/b", "/root/c"]


async def test_fork_turns_is_read_in_any_case(db_path):
    provider = RoutedProvider(root=[text_stream("Noted")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    await root.send("The data is in sales.csv")
    forked = []
    for task, fork_turns in (("upper", "ALL"), ("title", "None"), ("spaced", " all ")):
        script, control = controlled_stream()
        provider.add(task, script)
        output = await run_tool(root, "spawn_agent", task_name=task, message="Go",
                                fork_turns=fork_turns, model=f"anthropic:{task}")
        assert json.loads(output)["status"] == "running", output
        await wait_until(lambda task=task: len(provider.requests(task)) == 1)
        forked.append(provider.requests(task)[0].messages)
        control.close()
    history = [Message.user("The data is in sales.csv"), root.history[1]]
    assert forked == [[*history, Message.user("Go")], [Message.user("Go")],
                      [*history, Message.user("Go")]]
    await rt.aclose()
