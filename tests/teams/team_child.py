"""A process for the team crash tests: a lead mails its teammate alice, alice's
run gets to a phase with that mail inflight, the process prints
`READY <lead id> <alice id>` and waits to be SIGKILLed.

    python -m tests.teams.team_child DB PHASE     (PHASE: streaming | tool)
"""

from __future__ import annotations

import asyncio
import sys

from mentra_nb import Runtime, SqliteStore
from mentra_nb.testing import ScriptedProvider, controlled_stream, tool_use_stream
from tests.children import blocking_tool, reach, say, stream_text, until_killed


async def main(db: str, phase: str) -> None:
    script, control = controlled_stream()
    first = script if phase == "streaming" else tool_use_stream(
        "tool-1", "blocking_tool", '{"value": "hi"}')
    runtime = Runtime(store=SqliteStore(db), runtime_id="team-crash", tools=[blocking_tool],
                      providers=[ScriptedProvider("anthropic", [first])])
    lead = runtime.spawn("lead", "anthropic:model")
    alice = await lead.spawn_teammate("alice", "researcher")
    lead.send_team_message("alice", "Summarise the findings")
    if phase == "streaming":
        stream_text(control, "msg-1", "Hal")
        await reach(lambda: alice.snapshot.current_text == "Hal")
    else:
        await reach(lambda: alice.snapshot.status.name == "executing_tool")
    say(f"READY {lead.id} {alice.id}")
    await until_killed()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
