"""One live connection to one MCP server, shared by every agent of a runtime.

The SDK's client is a stack of anyio context managers (the child process or
HTTP client, the JSON-RPC dispatcher, the session) that must be entered and
left by the same task. So each connection has a supervisor task that enters
them, reports the ready client, and waits to be told to stop; tool calls from
any agent's task go through that client. Starting is bounded by the server's
`start_timeout` and fails with the server's name and the end of its stderr.

A server that dies (its process exits, its HTTP endpoint goes away) fails the
calls in flight; the connection is then marked broken and the next use starts
the server again. A `tools/list_changed` notification marks the tool list
stale, and the extension lists the tools again before the agent's next model
call.

Errors, statuses, stderr tails and log lines are scrubbed before anyone sees
them: a server that fails may echo its token (`echo "bad token $GH" >&2`), so
the values of the secrets the runtime knows and of every variable the
configuration names (`env={"GH": "$OPENAI_API_KEY"}`) become `[redacted]`.

The `mcp` SDK is imported only here, and only when a server starts, so the
runtime imports (and runs without MCP) where the `mcp` extra is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import tempfile
from collections import ChainMap
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TextIO

from mentra_nb.errors import MCPServerError
from mentra_nb.providers import find_dotenv_files, read_dotenv
from mentra_nb.runtime._redaction import MIN_SECRET_CHARS, known_secrets, scrub
from mentra_nb.runtime.mcp._config import MCPServer

if TYPE_CHECKING:
    from mcp.client import Client
    from mcp_types import CallToolResult, Tool

__all__ = ["ConnectionState", "ServerConnection", "ServerGone", "require_sdk"]

log = logging.getLogger("mentra_nb.runtime.mcp")

ConnectionState = Literal["stopped", "starting", "running", "failed"]
STDERR_TAIL_LINES = 12
_STDERR_TAIL_BYTES = 8_000
_STOP_GRACE = 10.0  # the SDK closes stdin, waits 2 s, then kills the process tree
_LIST_PAGES = 100  # a server whose tool list never ends cannot hang a start



class ProgressCallback(Protocol):
    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class ServerGone(Exception):
    """The server stopped during a call; it is restarted on the next one."""


def require_sdk() -> None:
    """Fail with what to install when the `mcp` SDK is missing."""
    try:
        found = importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        found = False
    if not found:
        raise MCPServerError("MCP servers need the official MCP SDK: pip install 'mentra-nb[mcp]'")


class ServerConnection:
    """Starts on first use, lists tools, calls them, restarts after a crash."""

    def __init__(self, config: MCPServer, environ: Mapping[str, str] = os.environ, *,
                 start_allowed: bool = True) -> None:
        self.config = config
        self._environ = environ
        # False for a server that came from the state file, until the user allows it.
        self._start_allowed = start_allowed
        self.state: ConnectionState = "stopped"
        self.error: str | None = None
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._stderr: TextIO | None = None
        self._lock = asyncio.Lock()
        self._tools: list[Tool] | None = None
        self._tools_stale = False
        self.tools_version = 0  # moves on whenever `tools` is listed again
        self.restarts = 0
        # Values the last start put into the child's arguments, env or headers.
        self._expanded: list[str] = []

    def __repr__(self) -> str:
        return f"<ServerConnection {self.config.name} {self.state}>"

    @property
    def name(self) -> str:
        return self.config.name

    def variables(self) -> Mapping[str, str]:
        """Where `$NAME` in env and header values is looked up, read afresh at each
        start: the environment, then a `.env` beside the notebook or in the working
        folder, as for provider keys (the file is read, never loaded into os.environ)."""
        return ChainMap(dict(self._environ), *(read_dotenv(path) for path in find_dotenv_files()))

    def scrub(self, text: str) -> str:
        """`text` without the secrets the runtime knows nor the values this server's
        configuration took from variables."""
        expanded = [v.strip() for v in self._expanded if len(v.strip()) >= MIN_SECRET_CHARS]
        return scrub(text, [*expanded, *known_secrets()])

    @property
    def start_allowed(self) -> bool:
        """Whether this server may start: added in this process, or allowed by the user."""
        return self._start_allowed

    def allow_start(self) -> None:
        self._start_allowed = True

    @property
    def tools(self) -> list[Tool] | None:
        """The tools last listed (None before the server first started)."""
        return self._tools

    @property
    def needs_refresh(self) -> bool:
        """Whether the next model call must wait for a (re)start or a fresh tool list."""
        return self.state != "running" or self._tools is None or self._tools_stale

    # --- starting -----------------------------------------------------------------

    async def ensure_ready(self) -> list[Tool]:
        """Start the server if it is not running, list its tools if they are stale."""
        async with self._lock:
            if self.state != "running" or self._client is None:
                await self._start()
            elif self._tools_stale or self._tools is None:
                self._tools = await self._list_tools(self._client)
                self._tools_stale = False
                self.tools_version += 1
            assert self._tools is not None
            return self._tools

    async def _start(self) -> None:
        require_sdk()
        if not self._start_allowed:
            raise MCPServerError(
                f"MCP server '{self.name}' came from the state file, not from this kernel, and "
                f"would run {self.config.describe()!r}; it starts once you allow it (an agent "
                "that uses it asks first) or add it in this kernel (rt.add_mcp_server, "
                "%mentra mcp add)")
        await self._shut_down()  # whatever is left of a broken connection
        config = self.config
        self.state, self.error = "starting", None
        with contextlib.suppress(MCPServerError):  # a variable that is not set fails below, by name
            self._expanded = config.variable_values(self.variables())
        if config.transport == "stdio":
            if self._stderr is not None:
                self._stderr.close()
            # A real file, because the child writes to it directly; closed by aclose().
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        # Its error is reported by the code below, or nobody waits for it any more
        # (a start that timed out): either way it must not be logged as unretrieved.
        ready.add_done_callback(lambda done: done.cancelled() or done.exception())
        stop = self._stop = asyncio.Event()
        self._task = loop.create_task(self._supervise(ready, stop), name=f"mentra-mcp-{config.name}")
        try:
            async with asyncio.timeout(config.start_timeout):
                client = await asyncio.shield(ready)
                tools = await self._list_tools(client)
        except TimeoutError:
            problem = (f"MCP server '{config.name}' did not start within {config.start_timeout:g} s "
                       f"({config.describe()}); raise its start_timeout if it is slow to start")
            await self._fail(problem)
            raise MCPServerError(self.scrub(problem + self._stderr_note())) from None
        except asyncio.CancelledError:
            await self._fail("its start was cancelled")
            raise
        except MCPServerError as err:
            await self._fail(str(err))
            raise MCPServerError(self.scrub(str(err))) from None
        except Exception as err:
            problem = f"MCP server '{config.name}' failed to start ({config.describe()}): {_reason(err)}"
            await self._fail(problem)
            raise MCPServerError(self.scrub(problem + self._stderr_note())) from None
        self._client, self._tools, self._tools_stale = client, tools, False
        self.tools_version += 1
        self.state = "running"

    async def _supervise(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        try:
            async with self._open() as client:
                if not ready.done():
                    ready.set_result(client)
                await stop.wait()
        except BaseException as err:  # reported through `ready` or the next call
            if not ready.done():
                ready.set_exception(err if isinstance(err, Exception) else MCPServerError(_reason(err)))
            elif not stop.is_set():
                log.info("MCP server %s stopped: %s", self.config.name, self.scrub(_reason(err)))
            if isinstance(err, asyncio.CancelledError):
                raise
        finally:
            if self._stop is stop and self.state == "running":
                # It ended without being asked to: the next call starts it again.
                self.state = "failed"
                self.error = "the server stopped"

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        from mcp.client import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        # "legacy": the initialize handshake every server speaks; list_changed and
        # progress then arrive as notifications on the one connection.
        options: dict[str, Any] = {"mode": "legacy", "cache": None,
                                   "message_handler": self._on_message}
        if config.transport == "stdio":
            variables = self.variables()
            program, args = config.program(variables)
            params = StdioServerParameters(command=program, args=args,
                                           env=config.resolved_env(variables), cwd=config.cwd)
            assert self._stderr is not None
            async with Client(stdio_client(params, errlog=self._stderr), **options) as client:
                yield client
        elif config.transport == "http":
            import httpx2

            headers = config.resolved_headers(self.variables())
            timeout = httpx2.Timeout(30.0, read=300.0)  # a server may hold a response stream open
            async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http, \
                    Client(streamable_http_client(str(config.url), http_client=http), **options) as client:
                yield client
        else:
            async with Client(config.sdk_server, **options) as client:
                yield client

    async def _list_tools(self, client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _on_message(self, message: Any) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._tools_stale = True
        elif isinstance(message, Exception):
            log.info("MCP server %s: %s", self.config.name, self.scrub(_reason(message)))

    # --- calling ------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any],
                   progress: ProgressCallback | None = None) -> CallToolResult:
        """Call `tool`; raises `ServerGone` if the server stopped during the call,
        `MCPServerError` if it cannot be started, `mcp`'s `MCPError` for a protocol
        error the server answered with."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        await self.ensure_ready()
        client = self._client
        assert client is not None
        gone: Exception
        try:
            return await client.call_tool(tool, arguments, progress_callback=progress)
        except MCPError as err:
            if err.code != CONNECTION_CLOSED:
                raise
            gone = err
        except (OSError, EOFError) as err:
            gone = err
        except Exception as err:
            if not _is_transport_error(err):
                raise
            gone = err
        await self._broken(client)
        raise ServerGone(self.scrub(f"MCP server '{self.config.name}' stopped during the call "
                                    f"({_reason(gone)}); it will be started again on the next call"
                                    f"{self._stderr_note()}"))

    async def _broken(self, client: Client) -> None:
        async with self._lock:
            if self._client is not client:
                return  # another call already noticed, and perhaps started it again
            self.state, self.error = "failed", "the server stopped during a call"
            self.restarts += 1
            await self._shut_down()

    # --- stopping -----------------------------------------------------------------

    async def _fail(self, problem: str) -> None:
        await self._shut_down()
        self.state, self.error = "failed", self.scrub(problem)

    async def aclose(self) -> None:
        """Stop the server (closing a stdio server's stdin, then killing it if it stays)."""
        async with self._lock:
            await self._shut_down()
            self.state = "stopped"
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

    async def _shut_down(self) -> None:
        task, stop = self._task, self._stop
        self._client, self._task, self._stop = None, None, None
        if task is None:
            return
        if stop is not None:
            stop.set()
        done, _ = await asyncio.wait({task}, timeout=_STOP_GRACE)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        elif not task.cancelled() and (error := task.exception()) is not None:
            log.debug("MCP server %s ended with %s", self.config.name, self.scrub(str(error)))

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> list[str]:
        """The last lines the stdio server wrote to stderr (none for other transports)."""
        if self._stderr is None:
            return []
        try:
            fd = self._stderr.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, _STDERR_TAIL_BYTES, max(0, size - _STDERR_TAIL_BYTES))
        except (OSError, ValueError):
            return []
        text = self.scrub(data.decode("utf-8", errors="replace"))
        return [line for line in text.splitlines() if line.strip()][-lines:]

    def _stderr_note(self) -> str:
        tail = self.stderr_tail()
        if not tail:
            return ""
        return "\nits stderr ended with:\n" + "\n".join(f"  {line}" for line in tail)


def _is_transport_error(err: Exception) -> bool:
    """httpx2's errors and anyio's closed streams: the connection, not the tool, failed."""
    module = type(err).__module__
    return module.startswith(("httpx", "anyio")) or type(err).__name__ in (
        "ClosedResourceError", "BrokenResourceError", "EndOfStream")


def _reason(err: BaseException) -> str:
    """The innermost message of an error, unwrapping anyio's exception groups."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = str(err).strip()
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
