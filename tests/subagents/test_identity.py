"""A child knows it is a subagent: its system prompt opens with its path, its
parent, where its answer goes and how to reach the tree; the root's own
instructions follow once; spawning is offered only below `max_depth`."""

from __future__ import annotations

from mentra_nb import AgentConfig, Runtime, SqliteStore
from mentra_nb.runtime.subagents import SubagentLimits, subagent
from mentra_nb.testing import controlled_stream
from tests.conftest import wait_until
from tests.subagents.helpers import RoutedProvider, run_tool

ROOT_SYSTEM = "You analyse sales data for the finance team."


async def test_children_are_told_who_they_are_and_what_they_may_do(db_path):
    child_stream, child_control = controlled_stream()
    grandchild_stream, grandchild_control = controlled_stream()
    provider = RoutedProvider(child=[child_stream], grandchild=[grandchild_stream])
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=AgentConfig(
        system=ROOT_SYSTEM, subagents=SubagentLimits(max_agents=4, max_concurrency=3, max_depth=2)))

    await run_tool(root, "spawn_agent", task_name="region", message="Sum the north",
                   model="anthropic:child")
    child = subagent(root, "/root/region")
    await run_tool(child, "spawn_agent", task_name="month", message="Sum January",
                   model="anthropic:grandchild")
    await wait_until(lambda: provider.requests("child") and provider.requests("grandchild"))
    child_request = provider.requests("child")[0]
    grandchild_request = provider.requests("grandchild")[0]

    child_system = child_request.system or ""
    assert child_system.startswith("You are a subagent at /root/region in a tree of agents, "
                                   "started by /root (your parent)")
    assert "is reported to /root as your result" in child_system
    assert 'send_message {target: "/root", message}' in child_system
    assert "wait_agent" in child_system and "spawn_agent starts a subagent" in child_system
    assert child_system.endswith(f"The root agent's own instructions, for context:\n{ROOT_SYSTEM}")

    # The grandchild sits at max_depth: told so, not offered the spawning tools, and
    # the preambles do not pile up (the root's instructions appear once).
    grandchild_system = grandchild_request.system or ""
    assert grandchild_system.startswith("You are a subagent at /root/region/month in a tree of "
                                        "agents, started by /root/region (your parent)")
    assert "cannot start subagents" in grandchild_system
    assert grandchild_system.count("You are a subagent") == 1
    assert grandchild_system.count(ROOT_SYSTEM) == 1
    offered = {tool.name for tool in grandchild_request.tools}
    assert offered == {"send_message", "list_agents", "interrupt_agent", "wait_agent"}
    assert {"spawn_agent", "followup_task"} <= {tool.name for tool in child_request.tools}
    assert root.config.system == ROOT_SYSTEM  # the root's own prompt is untouched

    child_control.close()
    grandchild_control.close()
    await rt.aclose()
