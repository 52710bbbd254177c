"""Issue 33 (19): a state file can come from anyone, and an MCP server stored in it
is a command that runs with your rights. A server that came from the file (not
added in this process) starts only once the user allowed it: the agent asks first,
showing the command, as before a tool call; nothing stored answers that question."""

from __future__ import annotations

import asyncio
import sys

import pytest

from mentra_nb import AgentConfig, MCPServer, MCPServerError, Runtime, SqliteStore
from mentra_nb.runtime import mcp
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.conftest import wait_until
from tests.mcp.servers import CRASHY


@pytest.fixture
async def runtime():
    """Runtimes of one notebook's state file, each closed (stopping its servers) pass or fail."""
    made: list[Runtime] = []

    def make(path, *scripts, servers=()) -> Runtime:
        made.append(Runtime.empty(store=SqliteStore(path), providers=[ScriptedProvider("s", list(scripts))],
                                  runtime_id="nb", mcp_servers=servers))
        return made[-1]

    yield make
    for rt in made:
        await rt.aclose()


@pytest.fixture
def planted(tmp_path):
    """A state file as someone else left it: a server whose command leaves a mark when it
    runs, and an agent that uses it and auto-approves everything."""
    script = tmp_path / "server.sh"
    script.write_text(f'#!/bin/sh\ntouch "{tmp_path}/it-ran"\nexec "{sys.executable}" "{CRASHY}"\n')
    script.chmod(0o755)
    server = MCPServer.stdio("helper", [str(script)])
    return tmp_path / "shared.sqlite", server, tmp_path / "it-ran"


async def _pending(agent):
    await wait_until(lambda: agent.snapshot.pending_approvals)
    [pending] = agent.snapshot.pending_approvals
    return pending


async def test_a_stored_server_asks_before_its_first_start_and_a_denial_starts_nothing(planted, runtime):
    path, server, ran = planted
    elsewhere = runtime(path, servers=[server])
    elsewhere.spawn("a", "s:m", AgentConfig(mcp_servers=["helper"], auto_approve=["*"]))
    await elsewhere.aclose()

    rt = runtime(path, text_stream("started it"))
    [agent] = rt.resume()
    [info] = mcp.servers(rt)
    assert info.needs_approval and info.target == server.describe()
    turn = asyncio.create_task(agent.send("hi"))
    pending = await _pending(agent)  # auto_approve=["*"] from the file did not answer it
    assert pending.tool_name == "start MCP server 'helper'"
    assert pending.input["command"] == server.describe() and "came from the state file" in pending.input["why"]
    assert not ran.exists()
    agent.deny(pending.reference, "not mine")
    with pytest.raises(MCPServerError, match=r"was not started: it came from the state file and you did not "
                                             r"allow it \(not mine\)"):
        await turn
    assert not ran.exists() and agent.history == []  # the run rolled back, its message kept
    # Nor does a start the user did not ask for through an agent run it.
    with pytest.raises(MCPServerError, match="came from the state file, not from this kernel, and would run"):
        await mcp.list_tools(rt, "helper")
    assert not ran.exists()


async def test_an_approved_stored_server_starts_and_is_not_asked_about_again(planted, runtime):
    path, server, ran = planted
    elsewhere = runtime(path, servers=[server])
    elsewhere.spawn("a", "s:m", AgentConfig(mcp_servers=["helper"]))
    await elsewhere.aclose()

    rt = runtime(path, text_stream("one"), text_stream("two"))
    [agent] = rt.resume()
    turn = asyncio.create_task(agent.send("hi"))
    pending = await _pending(agent)
    agent.approve(pending.reference, always=True)
    assert (await turn).text == "one" and ran.exists()
    assert mcp.servers(rt)[0].state == "running" and not mcp.servers(rt)[0].needs_approval
    assert (await agent.send("again")).text == "two"  # allowed for this runtime's life
    assert agent.always_allowed_tools == []  # "always" is not written to the file


async def test_a_server_added_in_this_process_starts_without_asking(planted, runtime):
    path, server, ran = planted
    elsewhere = runtime(path, servers=[server])
    elsewhere.spawn("a", "s:m", AgentConfig(mcp_servers=["helper"]))
    await elsewhere.aclose()

    rt = runtime(path, text_stream("mine"))
    rt.add_mcp_server(server)  # the notebook's own `%mentra mcp add` cell, run again
    [agent] = rt.resume()
    assert (await agent.send("hi")).text == "mine" and ran.exists()
    assert agent.snapshot.pending_approvals == []
