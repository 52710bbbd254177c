"""The reference MCP servers, which no one here wrote, through whole agent turns:
`mcp-server-time` and `mcp-server-git` (PyPI) over stdio, and the npm
`@modelcontextprotocol/server-everything` over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from mentra_nb import AgentConfig, ImageBlock, MCPServer, Runtime, SqliteStore
from mentra_nb.runtime import mcp
from mentra_nb.runtime.events import ToolExecutionProgress
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import wait_until
from tests.mcp.servers import everything_command, free_port, http_everything

pytestmark = pytest.mark.process

TIME = ["python", "-m", "mcp_server_time", "--local-timezone", "UTC"]


def _call(name: str, arguments: dict, call_id: str = "c1"):
    return tool_use_stream(call_id, name, json.dumps(arguments))


async def test_time_over_stdio_answers_a_call_and_comes_back_after_a_restart(db_path: Path):
    provider = ScriptedProvider("s", [_call("mcp__time__get_current_time", {"timezone": "UTC"}),
                                      text_stream("it is now")])
    rt = Runtime.empty(store=SqliteStore(db_path), runtime_id="nb", providers=[provider],
                       mcp_servers=[MCPServer.stdio("time", TIME)])
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["time"]))
    try:
        await agent.send("what time is it?")
        [result] = agent.history[-2].tool_results
        assert not result.is_error  # read-only per its annotations: no approval asked
        assert json.loads(result.content)["timezone"] == "UTC"
    finally:
        await rt.aclose()

    # A new runtime on the same file, told nothing about MCP, as after a kernel restart.
    provider = ScriptedProvider("s", [_call("mcp__time__convert_time", {
        "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}), text_stream("ok")])
    rt = Runtime.empty(store=SqliteStore(db_path), runtime_id="nb", providers=[provider])
    try:
        assert [s.name for s in mcp.servers(rt)] == ["time"]
        [agent] = rt.resume()
        turn = asyncio.create_task(agent.send("and noon in Tokyo?"))
        # The server came from the file, not from this runtime: its first start asks.
        await wait_until(lambda: agent.snapshot.pending_approvals)
        [pending] = agent.snapshot.pending_approvals
        assert pending.input["command"] == " ".join(TIME)
        agent.approve(pending.reference)
        await turn
        [result] = agent.history[-2].tool_results
        assert not result.is_error and "21:00" in result.content
        assert "mcp__time__convert_time" in {t.name for t in provider.recorded_requests()[0].tools}
    finally:
        await rt.aclose()


async def test_git_reads_freely_and_asks_before_it_changes_the_repository(tmp_path: Path):
    repo = tmp_path / "repo"
    await asyncio.to_thread(_git, "init", "-q", str(repo))
    (repo / "notes.txt").write_text("hello\n")
    provider = ScriptedProvider("s", [
        _call("mcp__git__git_status", {"repo_path": str(repo)}), text_stream("untracked"),
        _call("mcp__git__git_add", {"repo_path": str(repo), "files": ["notes.txt"]}, "c2"), text_stream("added"),
    ])
    rt = Runtime.empty(providers=[provider], mcp_servers=[
        MCPServer.stdio("git", ["python", "-m", "mcp_server_git", "--repository", str(repo)])])
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["git"]))
    try:
        await agent.send("status?")
        [status] = agent.history[-2].tool_results
        assert not status.is_error and "notes.txt" in status.content
        run = asyncio.create_task(agent.send("stage it"))
        await wait_until(lambda: bool(agent.snapshot.pending_approvals))
        assert [p.tool_name for p in agent.snapshot.pending_approvals] == ["mcp__git__git_add"]
        assert await asyncio.to_thread(_git, "-C", str(repo), "status", "--porcelain") == "?? notes.txt\n"
        agent.approve("c2")
        await run
        assert await asyncio.to_thread(_git, "-C", str(repo), "status", "--porcelain") == "A  notes.txt\n"
    finally:
        await rt.aclose()


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


async def _exercise_everything(server: MCPServer) -> None:
    """Images, annotations, structured content and progress from the everything server."""
    provider = ScriptedProvider("s", [
        _call("mcp__every__get-tiny-image", {}), text_stream("a logo"),
        _call("mcp__every__get-structured-content", {"location": "Chicago"}, "c2"), text_stream("rainy"),
        _call("mcp__every__get-annotated-message", {"messageType": "error", "includeImage": True}, "c3"),
        text_stream("noted"),
        _call("mcp__every__trigger-long-running-operation", {"duration": 0.3, "steps": 3}, "c4"),
        text_stream("done"),
    ])
    rt = Runtime.empty(providers=[provider], mcp_servers=[server])
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["every"]))
    progress: list[ToolExecutionProgress] = []
    agent.on_event(lambda e: progress.append(e) if isinstance(e, ToolExecutionProgress) else None)
    try:
        await agent.send("show me the logo")
        images = agent.history[-2].tool_results[0].images
        assert [i.media_type for i in images] == ["image/png"] and len(images[0].data) > 1000
        assert "The image above is the MCP logo." in agent.history[-2].tool_results[0].content

        await agent.send("weather in Chicago?")
        [weather] = agent.history[-2].tool_results
        assert json.loads(weather.content) == {"temperature": 36, "conditions": "Light rain / drizzle",
                                               "humidity": 82}

        await agent.send("an annotated message")
        message = agent.history[-2]
        assert "Error: Operation failed" in message.tool_results[0].content
        # The image is annotated for the user's eyes only: the model is told, not shown.
        assert "meant for the user only" in message.tool_results[0].content
        assert not any(isinstance(b, ImageBlock) for b in message.content)
        assert not message.tool_results[0].images

        await agent.send("a long job")
        assert "Long running operation completed" in agent.history[-2].tool_results[0].content
        assert [(p.name, p.message) for p in progress] == [
            ("mcp__every__trigger-long-running-operation", f"{i}/3") for i in (1, 2, 3)]
    finally:
        await rt.aclose()


async def test_the_everything_server_over_stdio():
    await _exercise_everything(MCPServer.stdio("every", everything_command()))


async def test_the_everything_server_over_streamable_http(monkeypatch: pytest.MonkeyPatch, db_path: Path):
    canary = "mentra-canary-mcp-token-7f3a"
    monkeypatch.setenv("EVERY_TOKEN", canary)
    with http_everything() as http:
        server = MCPServer.http("every", http.url, headers={"Authorization": "Bearer $EVERY_TOKEN"})
        await _exercise_everything(server)
        # The header's variable is stored by name; its value never reaches the file.
        rt = Runtime.empty(store=SqliteStore(db_path), runtime_id="nb", mcp_servers=[server])
        try:
            tools = await mcp.list_tools(rt, "every")
            assert "mcp__every__get-sum" in {t.name for t in tools}
        finally:
            await rt.aclose()
    stored = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    assert b"$EVERY_TOKEN" in stored and canary.encode() not in stored


async def test_an_http_server_that_goes_away_mid_call_gives_an_error_result_and_is_reached_again():
    port = free_port()
    provider = ScriptedProvider("s", [
        _call("mcp__every__trigger-long-running-operation", {"duration": 60, "steps": 60}), text_stream("cut"),
        _call("mcp__every__echo", {"message": "still there?"}, "c2"), text_stream("yes"),
    ])
    with http_everything(port) as first:
        rt = Runtime.empty(providers=[provider], mcp_servers=[MCPServer.http("every", first.url)])
        agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["every"]))
        progress: list[ToolExecutionProgress] = []
        agent.on_event(lambda e: progress.append(e) if isinstance(e, ToolExecutionProgress) else None)
        try:
            run = asyncio.create_task(agent.send("a long job"))
            await wait_until(lambda: bool(progress))  # the call is under way
            first.stop()
            await run
            [cut] = agent.history[-2].tool_results
            assert cut.is_error and "MCP server 'every' stopped during the call" in cut.content
            with http_everything(port):  # back on the same address
                await agent.send("are you there")
                [echo] = agent.history[-2].tool_results
                assert not echo.is_error and "still there?" in echo.content
        finally:
            await rt.aclose()
