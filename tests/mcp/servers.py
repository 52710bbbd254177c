"""The MCP servers the tests run for real, and how to start and always stop them.

- `mcp-server-time` and `mcp-server-git` (PyPI, in the `test` extra) over stdio;
- `@modelcontextprotocol/server-everything` (npm, `tests/mcp/package.json`;
  `.ci/run` runs `npm ci` here) over stdio and streamable HTTP on 127.0.0.1;
- `crashy_server.py`, written here with the SDK, to crash or fail on purpose.
Tests skip when the npm server is not installed, except under `CI`, where
that is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import missing

__all__ = ["CRASHY", "EVERYTHING", "HERE", "HttpServer", "everything_command", "free_port",
           "http_everything", "python_command"]

HERE = Path(__file__).resolve().parent
CRASHY = str(HERE / "crashy_server.py")
EVERYTHING = HERE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOOPBACK = HERE / "loopback.cjs"


def _need_everything() -> None:
    if EVERYTHING.exists() and shutil.which("node"):
        return
    missing("the npm MCP server is not installed: cd tests/mcp && npm ci")


def everything_command(transport: str = "stdio") -> list[str]:
    _need_everything()
    return ["node", "--require", str(LOOPBACK), str(EVERYTHING), transport]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    """The everything server over streamable HTTP on 127.0.0.1 (`stop()` kills it)."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc = subprocess.Popen(everything_command("streamableHttp"),
                                     env={**os.environ, "PORT": str(port)},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"the everything server exited: {self.proc.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("the everything server did not listen within 30 s") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@contextmanager
def http_everything(port: int | None = None) -> Iterator[HttpServer]:
    """Starts the everything server over HTTP; it is killed afterwards, pass or fail."""
    server = HttpServer(port or free_port())
    try:
        yield server
    finally:
        server.stop()


def python_command(*args: str) -> list[str]:
    """A stdio command line running this interpreter (`python` means it too)."""
    return [sys.executable, *args]
