"""MCP in a real kernel: `%mentra mcp add`, an agent whose turn calls the time
server, `kill -9` of the kernel, a new kernel, `%mentra resume`, another call."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TypeVar

import psutil
import pytest

T = TypeVar("T")

pytestmark = pytest.mark.process

# A scripted model that calls get_current_time for UTC, then answers with the result.
SCRIPTED = (
    "import mentra_nb.notebook as nb\n"
    "from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream\n"
    "nb.session().runtime.providers.register(ScriptedProvider('scripted', [\n"
    "    tool_use_stream('{call}', 'mcp__time__get_current_time', '{{\"timezone\": \"UTC\"}}'),\n"
    "    text_stream('checked the clock')]))\n"
)
LAST_RESULT = ("r = nb.session().agent('a').history[-2].tool_results[0]\n"
               "print(r.is_error, r.content)")


def _servers_of(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True)
            if "mcp_server_time" in " ".join(p.cmdline())]


def _wait_for(check: Callable[[], T | None], timeout: float = 30) -> T:
    """`check()`'s first truthy value, polled until `timeout`."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(0.2)
    return found


def test_mcp_tools_survive_kill_minus_nine_and_resume(kernels):
    first = kernels()
    orphans: list[psutil.Process] = []
    try:
        first.run("%load_ext mentra_nb")
        out = first.run("%mentra mcp add time -- python -m mcp_server_time --local-timezone UTC")
        assert "MCP server 'time' added (python -m mcp_server_time --local-timezone UTC)" in out
        assert re.search(r"time +stdio +stopped +\? tools", first.run("%mentra mcp list"))
        first.run(SCRIPTED.format(call="c1"))
        first.run("%mentra spawn a --model scripted:m --mcp time")
        first.run("%mentra send a --wait what time is it")
        result = first.run(LAST_RESULT)
        assert result.startswith("False {") and '"timezone": "UTC"' in result
        assert re.search(r"time +stdio +running +2 tools", first.run("%mentra mcp list"))
        orphans = _servers_of(first.manager.provisioner.pid)
        assert len(orphans) == 1
        first.kill_hard()
        # Its stdin closed with the kernel, so the orphaned server exits by itself.
        gone, alive = psutil.wait_procs(orphans, timeout=20)
        assert alive == []

        second = kernels()
        second.run("%load_ext mentra_nb")
        out = second.run("%mentra resume")
        assert "mentra: resumed 'a'" in out
        assert "mentra: 'a' uses MCP servers time (started on first use)" in out
        # The server came from the state file, not from this kernel: the notice shows its command.
        assert ("mentra: MCP server 'time' came from the state file, not from this kernel, and runs: "
                "python -m mcp_server_time --local-timezone UTC\n  'a' asks your approval before it "
                "first starts it") in out
        assert re.search(r"time +stdio +stopped", second.run("%mentra mcp list"))  # remembered, not started
        second.run(SCRIPTED.format(call="c2"))
        second.run("turn = %mentra send a and now")
        # The turn waits for the user before the server's first start, as before a tool call.
        waiting = _wait_for(lambda: re.search(r"waiting for approval: start MCP server 'time'  "
                                              r"\(%mentra approve a (\S+), or %mentra deny\)",
                                              second.run("%mentra list")))
        assert not _servers_of(second.manager.provisioner.pid)  # nothing started yet
        second.run(f"%mentra approve a {waiting.group(1)}")
        second.run("turn.result()")
        result = second.run(LAST_RESULT)
        assert result.startswith("False {") and '"timezone": "UTC"' in result
        tools = second.run("%mentra mcp tools time")
        assert "mcp__time__get_current_time  (read-only)" in tools
        assert "mcp__time__convert_time  (read-only)" in tools
    finally:
        for process in orphans:
            if process.is_running():
                process.kill()


def test_mcp_magics_say_what_is_wrong(kernels):
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    text, errors, _status = kernel.execute("%mentra spawn a --mcp nope")
    assert "no MCP server named 'nope' in this notebook" in text + str(errors)
    assert "%mentra mcp add nope -- COMMAND" in text + str(errors)
    text, errors, _status = kernel.execute("%mentra mcp add gh --url http://127.0.0.1:9/mcp "
                                           "--header Authorization=abc")
    assert "header 'Authorization' looks secret" in text + str(errors)
    text, errors, _status = kernel.execute("%mentra mcp add broken -- python -c 'import sys; "
                                           "sys.stderr.write(\"no licence\\n\"); sys.exit(1)'")
    text, errors, _status = kernel.execute("%mentra mcp tools broken")
    said = text + str(errors)
    assert "MCP server 'broken' failed to start" in said and "no licence" in said
    assert re.search(r"broken +stdio +failed", kernel.run("%mentra mcp list"))
