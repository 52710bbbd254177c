"""The AgentView shows an MCP call like any tool call, and its server's progress
notifications while the call runs: the newest one, in batches like live text."""

from __future__ import annotations

import json
import threading
import time

import anyio
import comm
import pytest
from mcp.server.mcpserver import Context
from mcp.server.mcpserver import MCPServer as SdkServer
from mcp_types import ToolAnnotations

from mentra_nb import AgentConfig, MCPServer, Runtime
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import until


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


def reporting_server(reports: int, release: threading.Event) -> SdkServer:
    """A server whose `count` tool reports progress `reports` times as fast as it
    can, then holds the call until `release` is set."""
    server = SdkServer("counting")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def count(ctx: Context) -> str:
        """Counts rows, reporting progress."""
        for row in range(1, reports + 1):
            await ctx.report_progress(row, reports, f"row {row}")
        while not release.is_set():
            await anyio.sleep(0.01)
        return "counted"

    return server


def start(host, reports: int, release: threading.Event):
    provider = ScriptedProvider("s", [tool_use_stream("c1", "mcp__rows__count", "{}"), text_stream("done")])
    rt = host.call(lambda: Runtime.empty(providers=[provider], mcp_servers=[
        MCPServer.in_process("rows", reporting_server(reports, release))]))
    agent = host.call(lambda: rt.spawn("a", "s:m", AgentConfig(mcp_servers=["rows"])))
    return rt, agent


def comm_traffic(view: AgentView) -> list[dict]:
    """Every comm message the view sends from now on (state updates and custom messages)."""
    sent: list[dict] = []
    original = view.comm.send

    def record(data=None, metadata=None, buffers=None):
        sent.append(data)
        original(data=data, metadata=metadata, buffers=buffers)

    view.comm.send = record
    return sent


def test_progress_reports_reach_the_view_while_the_call_runs_and_clear_after(host):
    release = threading.Event()
    rt, agent = start(host, 3, release)
    view = AgentView(agent, host)
    shown: list[tuple[str, str]] = []
    view.observe(lambda change: shown.append((change["new"], view.status.get("tool_name", ""))),
                 names="progress")
    try:
        sending = host.submit(agent.send("go"))
        until(lambda: view.progress == "row 3 (3/3)")  # the newest report, while it runs
        release.set()
        sending.result(30)
        assert shown[0][1] == "mcp__rows__count" and shown[-1] == ("", "mcp__rows__count")
        assert view.progress == ""
        assert "mcp__rows__count" in view._markdown()  # the saved notebook names the call too
    finally:
        release.set()
        host.submit(rt.aclose()).result(30)


def test_a_flood_of_progress_reports_is_sent_in_batches_like_live_text(host, monkeypatch):
    """One 8-s MCP call with fast notifications once sent 22,641 comm messages (4.8 MB)
    to the browser, one per report. The view sends the newest report when a batch is
    due: the first at once, then at most one a second."""
    # The comm a widget gets outside a kernel, whatever an earlier test imported: once
    # ipykernel is imported its Comm replaces it, and a Comm with no kernel sends nothing.
    monkeypatch.setattr(comm, "create_comm", comm.DummyComm)
    reports = 3_000
    release = threading.Event()
    rt, agent = start(host, reports, release)
    view = AgentView(agent, host)
    sent = comm_traffic(view)
    try:
        started = time.monotonic()
        sending = host.submit(agent.send("go"))
        until(lambda: view.progress == f"row {reports} ({reports}/{reports})")
        seconds = time.monotonic() - started
        release.set()
        sending.result(30)
        host.call(lambda: None)
        updates = [m["state"]["progress"] for m in sent
                   if m.get("method") == "update" and "progress" in m.get("state", {})]
        sent_bytes = sum(len(json.dumps(m)) for m in sent)
        print(f"\n{reports} progress reports over {seconds:.2f} s: {len(updates)} progress updates, "
              f"{len(sent)} comm messages in all, {sent_bytes} bytes")
        assert updates[-2:] == [f"row {reports} ({reports}/{reports})", ""]
        assert len(updates) <= 2 + seconds  # the first at once, then at most one a second, then the clear
        assert len(sent) < 40 and sent_bytes < 20_000
    finally:
        release.set()
        host.submit(rt.aclose()).result(30)
