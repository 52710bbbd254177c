"""A real stdio server (tests/mcp/crashy_server.py, written with the SDK) that
fails to start, hangs, or dies in the middle of a call."""

from __future__ import annotations

import asyncio

import psutil
import pytest

from mentra_nb import AgentConfig, MCPServer, MCPServerError, Runtime
from mentra_nb.runtime import mcp
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.mcp.servers import CRASHY


def _runtime(server: MCPServer, *scripts) -> Runtime:
    return Runtime.empty(providers=[ScriptedProvider("s", list(scripts))], mcp_servers=[server])


async def test_a_server_that_exits_at_start_is_an_error_naming_it_with_its_stderr():
    rt = _runtime(MCPServer.stdio("crashy", ["python", CRASHY, "--fail-start"]))
    try:
        with pytest.raises(MCPServerError) as caught:
            await mcp.list_tools(rt, "crashy")
        message = str(caught.value)
        assert "MCP server 'crashy' failed to start" in message
        assert "cannot open its database /nonexistent/db.sqlite" in message
        assert mcp.servers(rt)[0].state == "failed"
    finally:
        await rt.aclose()


async def test_a_server_that_never_answers_times_out_with_its_stderr():
    rt = _runtime(MCPServer.stdio("crashy", ["python", CRASHY, "--hang"], start_timeout=2))
    try:
        with pytest.raises(MCPServerError) as caught:
            await mcp.list_tools(rt, "crashy")
        message = str(caught.value)
        assert "MCP server 'crashy' did not start within 2 s" in message
        assert "waiting for a licence server that never answers" in message
    finally:
        await rt.aclose()


async def test_a_missing_program_is_an_error_naming_the_server_and_the_command():
    rt = _runtime(MCPServer.stdio("ghost", ["mentra-no-such-program", "--stdio"]))
    try:
        with pytest.raises(MCPServerError, match=r"'ghost' failed to start \(mentra-no-such-program --stdio\)"):
            await mcp.list_tools(rt, "ghost")
    finally:
        await rt.aclose()


async def test_a_failed_start_fails_the_run_which_keeps_the_message_for_a_retry():
    rt = _runtime(MCPServer.stdio("crashy", ["python", CRASHY, "--fail-start"]), text_stream("never"))
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["crashy"]))
    try:
        with pytest.raises(MCPServerError, match="cannot open its database"):
            await agent.send("hi")
        assert agent.resumable_turn is not None and agent.history == []
    finally:
        await rt.aclose()


async def test_a_server_that_dies_mid_call_gives_an_error_result_and_restarts_on_the_next_call():
    rt = _runtime(
        MCPServer.stdio("crashy", ["python", CRASHY]),
        tool_use_stream("c1", "mcp__crashy__pid", "{}"), text_stream("1"),
        tool_use_stream("c2", "mcp__crashy__crash", "{}"), text_stream("2"),
        tool_use_stream("c3", "mcp__crashy__pid", "{}"), text_stream("3"),
    )
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["crashy"]))
    try:
        await agent.send("which process?")
        first_pid = int(agent.history[-2].tool_results[0].content.split()[0])
        await agent.send("crash")
        [crashed] = agent.history[-2].tool_results
        assert crashed.is_error
        assert "MCP server 'crashy' stopped during the call" in crashed.content
        assert "exiting mid-call on purpose" in crashed.content  # its stderr
        await agent.send("which process now?")
        [after] = agent.history[-2].tool_results
        assert not after.is_error and int(after.content.split()[0]) != first_pid
        assert not psutil.pid_exists(first_pid) or psutil.Process(first_pid).status() == psutil.STATUS_ZOMBIE
    finally:
        await rt.aclose()


async def test_aclose_stops_the_server_process():
    rt = _runtime(MCPServer.stdio("crashy", ["python", CRASHY]),
                  tool_use_stream("c1", "mcp__crashy__pid", "{}"), text_stream("1"))
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["crashy"]))
    try:
        await agent.send("which process?")
        pid = int(agent.history[-2].tool_results[0].content.split()[0])
        assert psutil.pid_exists(pid)
    finally:
        await rt.aclose()
    process = psutil.Process(pid) if psutil.pid_exists(pid) else None
    if process is not None:  # reaped a moment later at most; a zombie is a stopped process
        await asyncio.to_thread(process.wait, 10)
    assert not psutil.pid_exists(pid)


async def test_env_values_name_variables_of_the_environment_or_a_dotenv_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a .env in the working folder, as beside a notebook
    (tmp_path / ".env").write_text("MENTRA_TEST_FROM_DOTENV=from-the-dotenv-file\n")
    monkeypatch.setenv("MENTRA_TEST_FROM_ENV", "from-the-environment")
    monkeypatch.setenv("MENTRA_TEST_NOT_PASSED", "the child does not inherit this")
    server = MCPServer.stdio("crashy", ["python", CRASHY], env={
        "A": "$MENTRA_TEST_FROM_ENV", "B": "${MENTRA_TEST_FROM_DOTENV}!", "C": "plain"})
    calls = [tool_use_stream(f"c{i}", "mcp__crashy__getenv", f'{{"name": "{name}"}}')
             for i, name in enumerate(["A", "B", "C", "MENTRA_TEST_NOT_PASSED"])]
    rt = _runtime(server, *(s for call in calls for s in (call, text_stream("ok"))))
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["crashy"]))
    try:
        seen = []
        for _ in calls:
            await agent.send("read it")
            seen.append(agent.history[-2].tool_results[0].content.split("\n")[0])
        # The child saw the .env value; the runtime masks .env values in every tool
        # result (issue 14), so it shows as [redacted], followed by the literal "!".
        assert seen == ["from-the-environment", "[redacted]!", "plain", "(unset)"]
        assert "MENTRA_TEST_FROM_DOTENV" not in __import__("os").environ  # read, not loaded
    finally:
        await rt.aclose()


async def test_a_failed_start_that_echoes_its_token_leaks_it_into_no_error_status_or_store(tmp_path, monkeypatch):
    """Issue 33 (5): stderr echoing expanded variables, a provider key and a login kept under
    a name that does not look secret, reaches MCPServerError, the server's status, the
    agent's stored `failed:` status and the state file (WAL included) only as [redacted]."""
    from mentra_nb import SqliteStore

    key, login = "k3y-for-the-mcp-leak-test-0123456789", "correct-horse-battery-staple-42"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("MENTRA_TEST_GH_LOGIN", login)
    script = tmp_path / "fails.sh"
    script.write_text('#!/bin/sh\necho "auth failed for token $GH (login $LOGIN)" >&2\nexit 1\n')
    script.chmod(0o755)
    server = MCPServer.stdio("gh", [str(script)],
                             env={"GH": "$OPENAI_API_KEY", "LOGIN": "$MENTRA_TEST_GH_LOGIN"})
    path = tmp_path / "state.sqlite"
    rt = Runtime.empty(store=SqliteStore(path), providers=[ScriptedProvider("s", [text_stream("never")])],
                       mcp_servers=[server])
    agent = rt.spawn("a", "s:m", AgentConfig(mcp_servers=["gh"]))
    try:
        with pytest.raises(MCPServerError) as caught:
            await agent.send("hi")
        texts = {"the error": str(caught.value), "the server's status": mcp.servers(rt)[0].error or "",
                 "the agent's status": agent.status.error or ""}
        assert "auth failed for token [redacted] (login [redacted])" in texts["the error"]
        for where, text in texts.items():
            assert key not in text and login not in text, where
        assert "[redacted]" in texts["the agent's status"]
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("state.sqlite*"))
        assert b"auth failed for token" in stored  # the status is stored...
        assert key.encode() not in stored and login.encode() not in stored  # ...without the secrets
    finally:
        await rt.aclose()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("state.sqlite*"))
    assert key.encode() not in stored and login.encode() not in stored
