"""Root agents delegating to real child agents that run in parallel on the
runtime's loop, with each model scripted separately (`RoutedProvider`)."""

from __future__ import annotations

import asyncio
import json

from mentra_nb import AgentConfig, AgentStatus, Message, Runtime, SqliteStore
from mentra_nb.runtime.subagents import (
    SubagentLimits,
    list_subagents,
    stored_tree,
    subagent,
    subagent_picker,
    watch_subagents,
)
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.testing import controlled_stream, error_stream, text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT, wait_until
from tests.subagents.helpers import (
    RoutedProvider,
    call,
    finish_text,
    mail_texts,
    start_text,
    tool_results,
)

DELEGATE = AgentConfig(subagents=SubagentLimits(max_agents=8, max_concurrency=4, max_depth=3))


def spawn_call(tool_id: str, task: str, message: str, model: str, **extra) -> tuple[str, str, str]:
    return (tool_id, "spawn_agent",
            json.dumps({"task_name": task, "message": message, "model": f"anthropic:{model}", **extra}))


def statuses(root) -> dict[str, str]:
    return {info.path: info.status for info in list_subagents(root)}


async def test_children_run_in_parallel_and_their_results_reach_the_root_by_mail(db_path):
    script_a, control_a = controlled_stream()
    script_b, control_b = controlled_stream()
    provider = RoutedProvider(
        root=[
            tool_use_stream(*spawn_call("s1", "child_a", "Summarise part A", "child_a"),
                            calls=[spawn_call("s2", "child_b", "Summarise part B", "child_b")]),
            call("w1", "wait_agent"),
            call("w2", "wait_agent"),
            text_stream("A and B are summarised"),
        ],
        child_a=[script_a],
        child_b=[script_b],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    events: list = []
    watch_subagents(root, events.append)
    sending = asyncio.create_task(root.send("Summarise A and B"))

    # Both children are streaming at the same time: they run in parallel.
    await wait_until(lambda: provider.requests("child_a") and provider.requests("child_b"))
    assert statuses(root) == {"/root/child_a": "running", "/root/child_b": "running"}
    spawn_results = tool_results(provider.requests("root")[1])
    assert json.loads(spawn_results["s1"]) == {"task_name": "/root/child_a", "status": "running"}
    assert provider.requests("child_a")[0].messages == [Message.user("Summarise part A")]

    finish_text(control_b, "B: fine")  # out of order: B first
    await wait_until(lambda: len(provider.requests("root")) == 3)
    assert json.loads(tool_results(provider.requests("root")[2])["w1"]) == ["/root/child_b"]
    assert mail_texts(provider.requests("root")[2])[0].endswith(
        'agent="/root/child_b" status="completed">B: fine</subagent_update>')

    finish_text(control_a, "A: fine")
    reply = await asyncio.wait_for(sending, WAIT_LIMIT)
    assert reply.text == "A and B are summarised"
    last = provider.requests("root")[3]
    assert json.loads(tool_results(last)["w2"]) == ["/root/child_a"]
    assert [t.split('agent="')[1].split('"')[0] for t in mail_texts(last)] == [
        "/root/child_b", "/root/child_a"]
    assert statuses(root) == {"/root/child_a": "completed", "/root/child_b": "completed"}
    assert [i.last_message for i in list_subagents(root)] == ["A: fine", "B: fine"]
    # Read mail is acknowledged once the root's run committed it.
    assert subagent_mail.MAIL.pending(rt.store, root.id) == []
    assert subagent_mail.MAIL.inflight(rt.store, root.id) == []
    # Children are real persisted agents with their own transcripts.
    child_a = subagent(root, "/root/child_a")
    stored = rt.store.load_agent(child_a.id)
    assert (stored.record.kind, stored.record.parent_id) == ("subagent", root.id)
    assert [m.text for m in stored.transcript] == ["Summarise part A", "A: fine"]
    # The frontend followed along: last picker is all done, neutral tone.
    assert events[-1].picker.tone == "neutral" and events[-1].picker.count == 2
    assert [s.path for s in root.snapshot.subagents] == ["/root/child_a", "/root/child_b"]
    await rt.aclose()


async def test_a_three_level_tree_reports_back_through_mail(db_path):
    leaf_x, control_x = controlled_stream()
    leaf_y, control_y = controlled_stream()
    provider = RoutedProvider(
        root=[
            call("r1", "spawn_agent", task_name="mid", message="Research X and Y",
                 model="anthropic:mid"),
            call("r2", "wait_agent"),
            text_stream("Report: X and Y researched"),
        ],
        mid=[
            tool_use_stream(*spawn_call("m1", "leaf_x", "Look into X", "leaf_x"),
                            calls=[spawn_call("m2", "leaf_y", "Look into Y", "leaf_y")]),
            call("m3", "wait_agent"),
            call("m4", "wait_agent"),
            text_stream("X and Y: both fine"),
        ],
        leaf_x=[leaf_x],
        leaf_y=[leaf_y],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    sending = asyncio.create_task(root.send("Research X and Y"))

    await wait_until(lambda: provider.requests("leaf_x") and provider.requests("leaf_y"))
    infos = {i.path: i for i in list_subagents(root)}
    assert {p: (i.depth, i.parent) for p, i in infos.items()} == {
        "/root/mid": (1, "/root"), "/root/mid/leaf_x": (2, "/root/mid"),
        "/root/mid/leaf_y": (2, "/root/mid")}
    mid = subagent(root, "/root/mid")
    assert [s.path for s in mid.snapshot.subagents] == ["/root/mid/leaf_x", "/root/mid/leaf_y"]
    assert subagent(root, "/root/mid/leaf_x").snapshot.subagents == []

    finish_text(control_y, "Y is fine")
    await wait_until(lambda: len(provider.requests("mid")) == 3)
    finish_text(control_x, "X is fine")
    reply = await asyncio.wait_for(sending, WAIT_LIMIT)

    assert reply.text == "Report: X and Y researched"
    mid_mail = mail_texts(provider.requests("mid")[3])
    assert [t.split(">", 1)[1].split("<")[0] for t in mid_mail] == ["Y is fine", "X is fine"]
    # The root hears only from its own child, not from its grandchildren.
    [root_mail] = mail_texts(provider.requests("root")[2])
    assert 'agent="/root/mid" status="completed">X and Y: both fine<' in root_mail
    assert set(statuses(root).values()) == {"completed"}
    await rt.aclose()


async def test_interrupt_and_followup_restart_a_child_with_its_task(db_path):
    script, control = controlled_stream()
    root_step, root_control = controlled_stream()  # the root interrupts when we say so
    provider = RoutedProvider(
        root=[
            call("r1", "spawn_agent", task_name="slow", message="Count to a million",
                 model="anthropic:slow"),
            root_step,
            call("r3", "followup_task", target="/root/slow", message="Just count to three"),
            call("r4", "wait_agent"),
            text_stream("done"),
        ],
        slow=[script, text_stream("1, 2, 3")],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    sending = asyncio.create_task(root.send("go"))
    await wait_until(lambda: provider.requests("slow"))
    start_text(control, "1, 2, 3, 4, …")
    child = subagent(root, "/root/slow")
    await wait_until(lambda: child.snapshot.current_text.startswith("1, 2"))
    for event in call("r2", "interrupt_agent", target="slow").events:
        root_control.send(event)

    reply = await asyncio.wait_for(sending, WAIT_LIMIT)
    assert reply.text == "done"
    results = tool_results(provider.requests("root")[-1])
    assert json.loads(results["r2"]) == {"task_name": "/root/slow", "previous_status": "running"}
    assert json.loads(results["r3"]) == {"task_name": "/root/slow", "status": "running"}
    assert json.loads(results["r4"]) == ["/root/slow"]
    updates = mail_texts(provider.requests("root")[-1])
    assert 'status="interrupted"' in updates[0] and 'status="completed">1, 2, 3<' in updates[1]
    # The interrupted run was rolled back; the follow-up replays its task first.
    assert provider.requests("slow")[1].messages == [
        Message.user("Count to a million"), Message.user("Just count to three")]
    assert statuses(root) == {"/root/slow": "completed"}
    await rt.aclose()


async def test_an_errored_child_cannot_be_revived(db_path):
    from mentra_nb import StreamError

    provider = RoutedProvider(
        root=[
            call("r1", "spawn_agent", task_name="fragile", message="Try", model="anthropic:fragile"),
            call("r2", "wait_agent"),
            call("r3", "followup_task", target="fragile", message="Try again"),
            text_stream("gave up"),
        ],
        fragile=[error_stream([], StreamError("connection reset"))],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    await asyncio.wait_for(root.send("go"), WAIT_LIMIT)

    [info] = list_subagents(root)
    assert (info.status, info.last_message) == ("errored", "connection reset")
    last = provider.requests("root")[-1]
    assert 'status="errored">connection reset<' in mail_texts(last)[0]
    refusal = [b for m in last.messages for b in m.tool_results if b.tool_use_id == "r3"][0]
    assert refusal.is_error
    assert refusal.content.startswith("agent `/root/fragile` errored and cannot be revived")
    assert subagent_picker(root).tone == "error"
    await rt.aclose()


async def test_wait_agent_returns_at_once_when_no_child_is_working(db_path):
    provider = RoutedProvider(root=[call("w", "wait_agent", timeout_ms=120_000), text_stream("ok")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    await asyncio.wait_for(root.send("go"), WAIT_LIMIT)
    assert tool_results(provider.requests("root")[1]) == {"w": "[]"}
    await rt.aclose()


async def test_agents_without_subagents_config_get_no_tools_or_tree(db_path):
    provider = RoutedProvider(root=[text_stream("plain")])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    plain = rt.spawn("plain", "anthropic:root")
    await plain.send("hi")
    assert provider.requests("root")[0].tools == []
    assert plain.snapshot.subagents == []
    assert stored_tree(rt.store, plain.id) is None
    await rt.aclose()


async def test_closing_the_runtime_interrupts_children_without_notices(db_path):
    script, _control = controlled_stream()
    provider = RoutedProvider(
        root=[call("r1", "spawn_agent", task_name="forever", message="Run", model="anthropic:f"),
              text_stream("spawned")],
        f=[script],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    await root.send("go")
    child = subagent(root, "/root/forever")
    await wait_until(lambda: child.status == AgentStatus.streaming())
    await rt.aclose()
    state = stored_tree(SqliteStore(db_path), root.id)
    assert state["agents"]["/root/forever"]["status"] == "interrupted"
    # A crash would not have told the root either.
    assert subagent_mail.MAIL.pending(SqliteStore(db_path), root.id) == []
