"""A process that owns an agent while one of its tools blocks the event loop.

    python -m tests.runtime.lease_child DB WORKDIR

Prints `BLOCKING <agent id>` once the tool has blocked the loop; the tool
returns when WORKDIR/go exists, writing one line to WORKDIR/side_effects per
run; prints `DONE <reply>` once the run has committed, then closes."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from mentra_nb import Runtime, SqliteStore, tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.children import say


async def main(db: Path, work: Path) -> None:
    holder: list[str] = []

    @tool
    async def block() -> str:
        """A badly written async tool: it blocks the event loop until told to stop."""
        say(f"BLOCKING {holder[0]}")
        while not (work / "go").exists():
            time.sleep(0.05)  # noqa: ASYNC251 - the point of the test
        with (work / "side_effects").open("a") as f:
            f.write("ran\n")
        return "completed"

    provider = ScriptedProvider("scripted", [tool_use_stream("c1", "block", "{}"), text_stream("done")])
    store = SqliteStore(db)
    rt = Runtime.empty(store=store, providers=[provider], tools=[block], runtime_id="owner",
                       lease_ttl=0.5)
    agent = rt.spawn("writer", "scripted:m")
    holder.append(agent.id)
    reply = await agent.send("go")
    say(f"DONE {reply.text}")
    await rt.aclose()
    store.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
