"""`shell`: run a command with `/bin/sh -c`, opt-in and always approved by the user.

    rt = Runtime(tools=[shell_tool("~/analysis")])

It is not a sandbox. The command runs as the kernel's user with the kernel's
environment and can read, change or delete anything that user can; the only
guards are the user's approval of each call (the spec requires it, and
`AgentConfig.auto_approve` is the only way around that), a timeout that kills
the command's whole process group, and bounded output. `cwd` must lie inside
the workspace, but the command itself can go anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Annotated

from pydantic import Field

from mentra_nb.runtime._file_tools import Workspace, WorkspaceRefusal
from mentra_nb.runtime.tools import Tool, ToolDurability, ToolOutput, ToolSideEffectLevel, tool

__all__ = ["BoundedOutput", "shell_tool"]

DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000


class BoundedOutput:
    """Keeps the first and the last `limit // 2` bytes of a stream, counting the rest,
    so a command printing gigabytes takes a bounded amount of memory."""

    def __init__(self, limit: int) -> None:
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if self.total <= len(self.head) + len(self.tail):
            return head + self.tail.decode("utf-8", errors="replace")
        dropped = self.total - len(self.head) - len(self.tail)
        tail = self.tail.decode("utf-8", errors="replace")
        return (f"{head}\n[… {dropped} bytes of output left out; redirect to a file and read it "
                f"with read_file or grep to see everything …]\n{tail}")


def shell_tool(workspace: str | os.PathLike[str] | Workspace | None = None, *,
               max_output_chars: int = MAX_OUTPUT_CHARS) -> Tool:
    """The `shell` tool, running commands in `workspace` (default: the current folder)."""
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace or Path.cwd())

    # The spec's own timeout is only a backstop: the command's timeout_ms kills it first.
    @tool(requires_approval=True, side_effect_level=ToolSideEffectLevel.EXTERNAL,
          durability=ToolDurability.NOT_REPLAYABLE, timeout=MAX_TIMEOUT_MS / 1000 + 30)
    async def shell(
        command: Annotated[str, Field(min_length=1, description="Shell command, run with /bin/sh -c")],
        cwd: Annotated[str | None, Field(description="Folder to run in, relative to the workspace root")] = None,
        timeout_ms: Annotated[int | None, Field(ge=100, le=MAX_TIMEOUT_MS,
                                                description="Kill the command after this many ms")] = None,
    ) -> ToolOutput:
        """Run a shell command (/bin/sh -c) in the workspace; returns its exit code and output."""
        try:
            folder = ws.resolve(cwd) if cwd else ws.root
        except WorkspaceRefusal as refusal:
            return ToolOutput(content=str(refusal), is_error=True)
        if not folder.is_dir():
            return ToolOutput(content=f"cwd '{cwd}' is not a folder in the workspace; list_dir shows them",
                              is_error=True)
        limit_ms = timeout_ms or DEFAULT_TIMEOUT_MS
        output = BoundedOutput(max_output_chars)
        process = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, cwd=folder, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a timeout kills its children too
        )

        async def drain() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(65_536):
                output.feed(chunk)

        timed_out = False
        try:
            async with asyncio.timeout(limit_ms / 1000):
                await drain()
                await process.wait()
        except TimeoutError:
            timed_out = True
        finally:
            # Also on cancellation: never leave a command running behind a cancelled run.
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
        text = output.text().rstrip("\n") or "(no output)"
        if timed_out:
            return ToolOutput(is_error=True, content=(
                f"timed out after {limit_ms} ms and was killed (with its child processes); output so far:\n"
                f"{text}\nRun it with a larger timeout_ms (at most {MAX_TIMEOUT_MS}), or in the background "
                "writing to a file."))
        code = process.returncode
        return ToolOutput(content=f"exit code {code}\n{text}", is_error=code != 0)

    return shell
