"""The AgentView shows an MCP call like any tool call, and its server's progress
notifications while the call runs."""

from __future__ import annotations

import pytest

from mentra_nb import AgentConfig, MCPServer, Runtime
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.mcp.memory import memory_server


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


def test_progress_reports_reach_the_view_while_the_call_runs_and_clear_after(host):
    provider = ScriptedProvider("s", [tool_use_stream("c1", "mcp__mem__steps", "{}"), text_stream("done")])
    rt = host.call(lambda: Runtime.empty(providers=[provider],
                                         mcp_servers=[MCPServer.in_process("mem", memory_server())]))
    agent = host.call(lambda: rt.spawn("a", "s:m", AgentConfig(mcp_servers=["mem"])))
    view = AgentView(agent, host)
    shown: list[tuple[str, str]] = []
    view.observe(lambda change: shown.append((change["new"], view.status.get("tool_name", ""))),
                 names="progress")
    try:
        host.submit(agent.send("go")).result(30)
        assert shown == [*((f"step {i} ({i}/3)", "mcp__mem__steps") for i in (1, 2, 3)),
                         ("", "mcp__mem__steps")]
        assert view.progress == ""
        assert "mcp__mem__steps" in view._markdown()  # the saved notebook names the call too
    finally:
        host.submit(rt.aclose()).result(30)
