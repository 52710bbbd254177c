"""A process for the crash tests: it drives an agent into a phase, prints
`READY <agent id>`, and then waits to be SIGKILLed by the test.

    python -m tests.process.crash_child DB PHASE     (PHASE: idle | streaming | tool)
"""

from __future__ import annotations

import asyncio
import sys

from mentra_nb import (
    ContentBlockDelta,
    ContentBlockStarted,
    MessageStarted,
    Runtime,
    SqliteStore,
    tool,
)
from mentra_nb.testing import ScriptedProvider, controlled_stream, text_stream, tool_use_stream


@tool
async def blocking_tool(value: str) -> str:
    """Blocks until the process dies."""
    print("TOOL-STARTED", flush=True)
    await asyncio.Event().wait()
    return "unreachable"


async def main(db: str, phase: str) -> None:
    script, control = controlled_stream()
    scripts = [text_stream("first answer")]
    scripts.append(script if phase == "streaming" else tool_use_stream("tool-1", "blocking_tool", '{"value": "hi"}'))
    runtime = Runtime.empty(store=SqliteStore(db), runtime_id="crash", tools=[blocking_tool],
                            providers=[ScriptedProvider("anthropic", scripts)])
    agent = runtime.spawn("writer", "anthropic:model")
    await agent.send("first")
    if phase == "idle":
        print(f"READY {agent.id}", flush=True)
        await asyncio.Event().wait()
    send = asyncio.create_task(agent.send("second"))
    if phase == "streaming":
        control.send(MessageStarted(id="msg-2", model="model"))
        control.send(ContentBlockStarted.text(0))
        control.send(ContentBlockDelta.text(0, "Hel"))
        # Killed once the pending turn is in the file (its first checkpoint comes
        # a second into the stream), so the test sees what a crash mid-stream leaves.
        while (pending := runtime.store.load_agent(agent.id).pending_turn) is None \
                or pending.current_text != "Hel":
            await asyncio.sleep(0.01)
    else:
        while agent.snapshot.status.name != "executing_tool":
            await asyncio.sleep(0.001)
    print(f"READY {agent.id}", flush=True)
    await send


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
