"""Without the `mcp` extra, mentra-nb imports and runs; only adding an MCP server
says what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.children import REPO

SCRIPT = textwrap.dedent("""
    import asyncio, importlib.abc, sys

    class NoMcp(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "mcp" or name.startswith(("mcp.", "mcp_types")):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoMcp())
    from mentra_nb import MCPServer, MCPServerError, Runtime

    async def main():
        rt = Runtime.empty()
        reply = await rt.spawn("a", "test").send("hello")
        print("reply:", reply.text)
        try:
            rt.add_mcp_server(MCPServer.stdio("time", ["python", "-m", "mcp_server_time"]))
        except MCPServerError as err:
            print("error:", err)
        await rt.aclose()
        print("mcp imported:", any(m == "mcp" or m.startswith("mcp.") for m in sys.modules))

    asyncio.run(main())
""")


def test_without_the_sdk_the_runtime_works_and_adding_a_server_says_what_to_install():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert "reply: You said: hello" in out
    assert "error: MCP servers need the official MCP SDK: pip install 'mentra-nb[mcp]'" in out
    assert "mcp imported: False" in out
