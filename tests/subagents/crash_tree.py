"""A process for the SIGKILL test: a root delegates to two children, one of
which is left streaming; it prints `READY <root id>` and waits to be killed.

    python -m tests.subagents.crash_tree DB
"""

from __future__ import annotations

import asyncio
import json
import sys

from mentra_nb import AgentConfig, Runtime, SqliteStore
from mentra_nb.runtime.subagents import list_subagents, subagent
from mentra_nb.testing import controlled_stream, text_stream, tool_use_stream
from tests.subagents.helpers import RoutedProvider, start_text


def spawn(tool_id: str, task: str) -> tuple[str, str, str]:
    return (tool_id, "spawn_agent",
            json.dumps({"task_name": task, "message": f"Task {task}", "model": f"anthropic:{task}"}))


async def main(db: str) -> None:
    script_a, control_a = controlled_stream()
    provider = RoutedProvider(
        root=[tool_use_stream(*spawn("s1", "a"), calls=[spawn("s2", "b")]), text_stream("spawned")],
        a=[script_a], b=[text_stream("B done")],
    )
    rt = Runtime.empty(store=SqliteStore(db), runtime_id="crash-tree", providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True))
    await root.send("Do a and b")
    while not provider.requests("a"):
        await asyncio.sleep(0.001)
    start_text(control_a, "half of A")
    while (subagent(root, "/root/a").snapshot.current_text != "half of A"
           or list_subagents(root)[1].status != "completed"):
        await asyncio.sleep(0.001)
    print(f"READY {root.id}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
