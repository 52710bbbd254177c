"""A process for the restart test: its agent asks to run `drop_rows`, prints
`READY <agent id>` while the call waits for approval, and waits to be SIGKILLed.

    python -m tests.tools.approval_child DB
"""

from __future__ import annotations

import asyncio
import sys

from mentra_nb import Runtime, SqliteStore, tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.children import reach, say


@tool(requires_approval=True)
def drop_rows(count: int) -> str:
    """Drop rows (never runs here: nobody approves)."""
    raise AssertionError("ran without approval")


async def main(db: str) -> None:
    provider = ScriptedProvider("anthropic", [
        text_stream("first answer"),
        tool_use_stream("call-1", "drop_rows", '{"count": 5}'),
    ])
    runtime = Runtime.empty(store=SqliteStore(db), runtime_id="approvals", tools=[drop_rows],
                            providers=[provider])
    agent = runtime.spawn("writer", "anthropic:model")
    await agent.send("first")
    send = asyncio.create_task(agent.send("clean the table"))
    await reach(lambda: bool(agent.snapshot.pending_approvals))
    say(f"READY {agent.id}")
    await send


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
