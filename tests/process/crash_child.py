"""A process for the crash tests: it drives an agent into a phase, prints
`READY <agent id>`, and then waits to be SIGKILLed by the test.

    python -m tests.process.crash_child DB PHASE     (PHASE: idle | streaming | tool)
"""

from __future__ import annotations

import asyncio
import sys

from mentra_nb import Runtime, SqliteStore
from mentra_nb.testing import ScriptedProvider, controlled_stream, text_stream, tool_use_stream
from tests.children import blocking_tool, reach, say, stream_text, until_killed


async def main(db: str, phase: str) -> None:
    script, control = controlled_stream()
    scripts = [text_stream("first answer")]
    scripts.append(script if phase == "streaming" else tool_use_stream("tool-1", "blocking_tool", '{"value": "hi"}'))
    runtime = Runtime.empty(store=SqliteStore(db), runtime_id="crash", tools=[blocking_tool],
                            providers=[ScriptedProvider("anthropic", scripts)])
    agent = runtime.spawn("writer", "anthropic:model")
    await agent.send("first")
    if phase == "idle":
        say(f"READY {agent.id}")
        await until_killed()
    send = asyncio.create_task(agent.send("second"))
    if phase == "streaming":
        stream_text(control, "msg-2", "Hel")
        # Killed once the pending turn is in the file (its first checkpoint comes
        # a second into the stream), so the test sees what a crash mid-stream leaves.
        await reach(lambda: (pending := runtime.store.load_agent(agent.id).pending_turn) is not None
                    and pending.current_text == "Hel")
    else:
        await reach(lambda: agent.snapshot.status.name == "executing_tool")
    say(f"READY {agent.id}")
    await send


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
