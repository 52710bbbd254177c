"""The model-facing tools, called directly: schemas, input checks and the
error texts a model reads."""

from __future__ import annotations

import asyncio
import json

import pytest

from mentra_nb import AgentConfig, ContentBlock, Message, Runtime, SqliteStore, ToolOutput
from mentra_nb.runtime.subagents import (
    SubagentAgentExtension,
    SubagentLimitReached,
    SubagentLimits,
    list_subagents,
    subagent,
)
from mentra_nb.runtime.subagents._fork import fork_history
from mentra_nb.runtime.subagents._mailbox import render_mail
from mentra_nb.runtime.subagents._tree import Mail
from mentra_nb.runtime.tools import ToolInputError
from mentra_nb.testing import controlled_stream, text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT, wait_until
from tests.subagents.helpers import RoutedProvider, finish_text, run_tool

TOOL_NAMES = ["spawn_agent", "send_message", "followup_task", "list_agents", "interrupt_agent",
              "wait_agent"]


async def refusal(caller, name: str, /, **input) -> str:
    output = await run_tool(caller, name, **input)
    assert isinstance(output, ToolOutput) and output.is_error, output
    return output.content


@pytest.fixture
async def setup(db_path):
    provider = RoutedProvider()
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root",
                    config=AgentConfig(subagents=SubagentLimits(max_agents=4, max_concurrency=3,
                                                                max_depth=1)))
    yield rt, root, provider
    await rt.aclose()


async def test_root_is_offered_the_six_tools_with_strict_schemas(setup):
    _rt, root, _provider = setup
    tools = {t.spec.name: t.spec for t in root.tools()}
    assert list(tools) == TOOL_NAMES
    spawn = tools["spawn_agent"].input_schema
    assert spawn["required"] == ["task_name", "message"]
    assert spawn["properties"]["task_name"]["pattern"] == "^[a-z0-9_]{1,64}$"
    assert spawn["properties"]["fork_turns"]["anyOf"] == [
        {"type": "string", "enum": ["none", "all"]}, {"type": "integer", "minimum": 1}]
    wait = tools["wait_agent"].input_schema["properties"]["timeout_ms"]
    assert (wait["minimum"], wait["maximum"]) == (10_000, 120_000)
    assert tools["wait_agent"].timeout > 120  # the tool's own bound must come first
    assert all(s.input_schema["additionalProperties"] is False for s in tools.values())
    assert tools["list_agents"].read_only and not tools["spawn_agent"].read_only


@pytest.mark.parametrize("task_name", ["", "Has_Caps", "with-dash", "a" * 65, "sp ace", 7])
async def test_task_names_are_validated(setup, task_name):
    _rt, root, _provider = setup
    text = await refusal(root, "spawn_agent", task_name=task_name, message="hi")
    assert text.startswith(f"task_name {task_name!r} is not allowed: use 1-64 characters of a-z")
    assert list_subagents(root) == []


async def test_messages_must_be_non_blank_and_at_most_24000_bytes(setup):
    _rt, root, _provider = setup
    assert await refusal(root, "spawn_agent", task_name="a", message="  \n") == (
        "message must be non-empty text")
    too_big = "é" * 12_001  # 24,002 bytes
    text = await refusal(root, "spawn_agent", task_name="a", message=too_big)
    assert text.startswith("message is 24,002 bytes; the limit is 24,000 bytes (UTF-8)")
    assert await refusal(root, "send_message", target="/root", message="") == (
        "message must be non-empty text")


async def test_bad_fork_turns_and_timeouts_are_refused(setup):
    _rt, root, _provider = setup
    text = await refusal(root, "spawn_agent", task_name="a", message="x", fork_turns=0)
    assert text == 'fork_turns must be "none", "all" or a number of turns >= 1, not 0'
    for bad in (9_999, 120_001, "30000", True):
        text = await refusal(root, "wait_agent", timeout_ms=bad)
        assert text == f"timeout_ms must be an integer from 10000 to 120000, not {bad!r}"


async def test_unknown_fields_are_input_errors(setup):
    _rt, root, _provider = setup
    with pytest.raises(ToolInputError, match="unknown field\\(s\\) agent; it takes target"):
        await run_tool(root, "interrupt_agent", agent="/root/x")


async def test_an_unknown_model_is_refused_before_anything_is_reserved(setup):
    _rt, root, _provider = setup
    text = await refusal(root, "spawn_agent", task_name="a", message="x", model="antropic:m")
    assert "unknown provider 'antropic'" in text
    assert list_subagents(root) == []


async def test_depth_limit_stops_spawning_but_not_working(setup):
    rt, root, provider = setup
    script, control = controlled_stream()
    provider.add("child", script)
    output = await run_tool(root, "spawn_agent", task_name="child", message="work",
                            model="anthropic:child")
    assert json.loads(output) == {"task_name": "/root/child", "status": "running"}
    child = subagent(root, "/root/child")
    # At max_depth the spawning tools are not offered; the rest of the tree's tools are.
    assert [t.spec.name for t in child.tools()] == [
        "send_message", "list_agents", "interrupt_agent", "wait_agent"]
    assert "spawn_agent" in [t.spec.name for t in root.tools()]
    # A model that calls it anyway (e.g. from a forked history) gets the spec's refusal.
    with pytest.raises(SubagentLimitReached) as refused:
        child.extension(SubagentAgentExtension).spawn("grandchild", "x", "none", None)
    assert str(refused.value) == ("subagent depth limit 1 reached: `/root/child` is at depth 1 "
                                  "and cannot spawn agents; do this task yourself")
    control.close()


async def test_limits_are_reported_to_the_model(setup):
    _rt, root, provider = setup
    for name in ("a", "b"):
        script, _control = controlled_stream()
        provider.add(name, script)
        await run_tool(root, "spawn_agent", task_name=name, message="x", model=f"anthropic:{name}")
    assert await refusal(root, "spawn_agent", task_name="c", message="x") == (
        "subagent concurrency limit 3 (including root) reached")
    assert await refusal(root, "spawn_agent", task_name="a", message="x") == (
        "agent `/root/a` already exists")


async def test_interrupt_refusals(setup):
    _rt, root, _provider = setup
    assert await refusal(root, "interrupt_agent", target="/root") == (
        "the root agent cannot interrupt itself")
    assert (await refusal(root, "interrupt_agent", target="ghost")).startswith(
        "unknown agent `/root/ghost`")


async def test_send_message_and_list_agents(setup):
    _rt, root, provider = setup
    provider.add("a", text_stream("a is done"))
    await run_tool(root, "spawn_agent", task_name="a", message="x", model="anthropic:a")
    await wait_until(lambda: list_subagents(root)[0].status == "completed")
    output = await run_tool(root, "send_message", target="a", message="a note for later")
    assert json.loads(output) == {"task_name": "/root/a", "queued": True}
    listed = json.loads(await run_tool(root, "list_agents"))
    assert listed == [{"task_name": "/root/a", "status": "completed", "model": "anthropic:a",
                       "last_message": "a is done"}]
    assert json.loads(await run_tool(root, "list_agents", path_prefix="/root/b")) == []
    assert await refusal(root, "send_message", target="/root", message="me?") == (
        "an agent cannot send a message to itself")
    # A child reads its mail at its next step: a follow-up delivers it.
    provider.add("a", text_stream("noted"))
    await run_tool(root, "followup_task", target="a", message="anything else?")
    await wait_until(lambda: list_subagents(root)[0].last_message == "noted")
    first, follow, note = provider.requests("a")[1].messages[-3:]
    assert follow == Message.user("anything else?")
    assert note.text.endswith('from="/root">a note for later</subagent_message>')


async def test_followup_refuses_a_running_child(setup):
    _rt, root, provider = setup
    script, control = controlled_stream()
    provider.add("a", script)
    await run_tool(root, "spawn_agent", task_name="a", message="x", model="anthropic:a")
    assert (await refusal(root, "followup_task", target="a", message="more")).startswith(
        "agent `/root/a` is still running; use send_message")
    control.close()


async def test_interrupting_a_child_before_its_run_began_still_records_it(setup):
    _rt, root, provider = setup
    provider.add("a", text_stream("never streamed"))
    await run_tool(root, "spawn_agent", task_name="a", message="x", model="anthropic:a")
    # Same loop step as the spawn: the child's task has not run yet.
    output = await run_tool(root, "interrupt_agent", target="a")
    assert json.loads(output)["previous_status"] == "running"
    assert list_subagents(root)[0].status == "interrupted"
    assert provider.requests("a") == []


def test_fork_turns_none_all_and_n():
    history = [
        Message.user("q1"), Message.assistant("a1"),
        Message.user("q2"), Message.assistant("a2"),
        render_mail(Mail(id="m0123456789abcdef", sender="/root/x", recipient="/root", text="hi")),
        Message.user("q3"),
        Message.assistant(ContentBlock.tool_use("spawn-1", "spawn_agent", {"task_name": "c"})),
    ]
    assert fork_history(history, "none") == []
    everything = fork_history(history, "all")
    # Mail is dropped, and so is the spawn call that has no result yet.
    assert [m.text for m in everything] == ["q1", "a1", "q2", "a2", "q3"]
    assert [m.text for m in fork_history(history, 2)] == ["q2", "a2", "q3"]
    assert [m.text for m in fork_history(history, 1)] == ["q3"]
    assert fork_history(history, 10) == everything


async def test_a_forked_child_starts_with_its_parents_turns(db_path):
    provider = RoutedProvider(
        root=[text_stream("Paris"),
              tool_use_stream("s", "spawn_agent", json.dumps(
                  {"task_name": "fact_check", "message": "Check that answer", "fork_turns": 1,
                   "model": "anthropic:checker"})),
              text_stream("checking")],
        checker=[text_stream("Correct")],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True))
    await root.send("Capital of France?")
    await root.send("Have it checked")
    await wait_until(lambda: list_subagents(root)[0].status == "completed")
    [request] = provider.requests("checker")
    assert [m.text for m in request.messages] == ["Have it checked", "Check that answer"]
    stored = rt.store.load_agent(subagent(root, "/root/fact_check").id)
    assert [m.text for m in stored.transcript] == ["Have it checked", "Check that answer", "Correct"]
    await rt.aclose()


async def test_wait_agent_returns_after_a_child_finishes(setup):
    _rt, root, provider = setup
    script, control = controlled_stream()
    provider.add("a", script)
    await run_tool(root, "spawn_agent", task_name="a", message="x", model="anthropic:a")
    waiting = asyncio.create_task(run_tool(root, "wait_agent", timeout_ms=10_000))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    finish_text(control, "finished")
    assert json.loads(await asyncio.wait_for(waiting, WAIT_LIMIT)) == ["/root/a"]
