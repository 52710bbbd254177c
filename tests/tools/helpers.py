"""Run a tool the way the turn loop does, without a model."""

from __future__ import annotations

from typing import Any

from mentra_nb import Runtime, ToolOutput
from mentra_nb.runtime.tools import ToolContext


async def call(tool, **input: Any) -> ToolOutput:
    """The tool's result as a ToolOutput (plain strings are successes)."""
    rt = Runtime.empty()
    agent = rt.spawn("caller", "test")
    try:
        out = await tool.run(ToolContext(agent, "call-1", tool.spec.name), input)
    finally:
        await rt.aclose()
    return out if isinstance(out, ToolOutput) else ToolOutput(content=out)


def by_name(tools) -> dict[str, Any]:
    return {t.spec.name: t for t in tools}
