"""Issue 14.5 and 14.8: what sits in a real workspace must never hang a tool or
wedge an agent: FIFOs, symlink loops, file names that are not UTF-8, lone
surrogates in tool output and provider deltas, absurdly nested tool arguments."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from mentra_nb import Runtime, SqliteStore, tool
from mentra_nb.runtime._file_tools import file_tools
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.tools.helpers import by_name, call


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.md").write_text("hello\n")
    return root


def _run_in_thread(fifo: Path, work) -> object:
    """Run `work()` in a thread; if it is stuck on the FIFO after a generous wait,
    unblock it by opening the FIFO's other end, and fail."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(60)
    if thread.is_alive():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # let the blocked open return
        os.close(fd)
        thread.join(10)
        pytest.fail("the tool blocked on a FIFO")
    return result[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_never_blocks_read_file_or_grep(ws):
    import asyncio

    fifo = ws / "pipe"
    os.mkfifo(fifo)
    tools = by_name(file_tools(ws))
    read = _run_in_thread(fifo, lambda: asyncio.run(call(tools["read_file"], path="pipe")))
    assert read.is_error and "not a regular file" in read.content
    grep = _run_in_thread(fifo, lambda: asyncio.run(call(tools["grep"], pattern="hello")))
    assert grep.content == "notes.md:1: hello"
    pointed = _run_in_thread(fifo, lambda: asyncio.run(call(tools["grep"], pattern="x", path="pipe")))
    assert pointed.is_error and "not a regular file" in pointed.content
    found = asyncio.run(call(tools["glob"], pattern="*"))
    assert found.content == "notes.md"
    listing = asyncio.run(call(tools["list_dir"]))
    assert "pipe  (not a regular file)" in listing.content


async def test_a_symlink_loop_does_not_disable_glob_grep_or_list_dir(ws):
    (ws / "a").symlink_to(ws / "b")
    (ws / "b").symlink_to(ws / "a")
    tools = by_name(file_tools(ws))
    assert (await call(tools["glob"], pattern="**/*.md")).content == "notes.md"
    assert (await call(tools["grep"], pattern="hello")).content == "notes.md:1: hello"
    assert "a -> symlink" in (await call(tools["list_dir"])).content
    out = await call(tools["read_file"], path="a")
    assert out.is_error and "cannot be resolved" in out.content


def _agent(tmp_path: Path, provider: ScriptedProvider, **kwargs):
    store = SqliteStore(tmp_path / "state.sqlite")
    rt = Runtime.empty(store=store, providers=[provider], **kwargs)
    return rt, store, rt.spawn("w", "scripted:m")


async def test_a_latin1_file_name_does_not_wedge_the_agent(tmp_path, ws):
    fd = os.open(os.fsencode(ws) + b"/caf\xe9.txt", os.O_WRONLY | os.O_CREAT)
    os.write(fd, b"hello from a Latin-1 name\n")
    os.close(fd)
    scripts = [tool_use_stream("c1", "list_dir", "{}"), tool_use_stream("c2", "glob", '{"pattern": "*"}'),
               tool_use_stream("c3", "grep", '{"pattern": "Latin"}'), text_stream("ok")]
    provider = ScriptedProvider("scripted", scripts)
    rt, store, agent = _agent(tmp_path, provider, tools=file_tools(ws))
    reply = await agent.send("look around")
    assert reply.text == "ok"
    results = [m.content[0].content for m in agent.history if m.tool_results]
    assert all("caf\ufffd.txt" in r for r in results), results
    await rt.aclose()
    reopened = SqliteStore(tmp_path / "state.sqlite")
    assert "caf\ufffd.txt" in reopened.load_agent(agent.id).transcript[2].content[0].content
    reopened.close()
    store.close()


async def test_lone_surrogates_from_a_tool_or_a_provider_are_replaced_not_fatal(tmp_path):
    @tool(read_only=True)
    def odd(x: str = "") -> str:
        """Return text with a lone surrogate."""
        return "half \udcff of a pair"

    provider = ScriptedProvider("scripted", [tool_use_stream("c1", "odd", '{"x": "\\ud800"}'),
                                             text_stream("bad \ud800 delta")])
    rt, store, agent = _agent(tmp_path, provider, tools=[odd])
    reply = await agent.send("go")
    assert reply.text == "bad \ufffd delta"
    assert agent.history[2].content[0].content == "half \ufffd of a pair"
    await rt.aclose()
    store.close()


async def test_deeply_nested_tool_arguments_come_back_as_an_error_result(tmp_path):
    @tool(read_only=True)
    def echo(x: object = None) -> str:
        """Echo."""
        return "ran"

    deep = '{"x": ' + "[" * 5000 + "]" * 5000 + "}"
    provider = ScriptedProvider("scripted", [tool_use_stream("c1", "echo", deep), text_stream("ok")])
    rt, store, agent = _agent(tmp_path, provider, tools=[echo])
    reply = await agent.send("go")
    assert reply.text == "ok"
    result = agent.history[2].content[0]
    assert result.is_error and "nest deeper than" in result.content
    await rt.aclose()
    store.close()
