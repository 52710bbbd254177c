"""A process for the subagent mail crash tests: a root delegates to a child `b`,
which finishes and leaves the root its notice; the root's next run claims that
notice and gets to a phase with it inflight; the process prints
`READY <root id> <notice id>` and waits to be SIGKILLed.

    python -m tests.subagents.mail_child DB PHASE     (PHASE: streaming | tool)
"""

from __future__ import annotations

import asyncio
import sys

from mentra_nb import AgentConfig, Runtime, SqliteStore
from mentra_nb.runtime.subagents import list_subagents
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.testing import controlled_stream, text_stream, tool_use_stream
from tests.children import blocking_tool, reach, say, stream_text, until_killed
from tests.subagents.helpers import RoutedProvider, call


async def main(db: str, phase: str) -> None:
    script, control = controlled_stream()
    second = script if phase == "streaming" else tool_use_stream(
        "tool-1", "blocking_tool", '{"value": "hi"}')
    provider = RoutedProvider(
        root=[call("s1", "spawn_agent", task_name="b", message="Task b", model="anthropic:b"),
              text_stream("spawned"), second],
        b=[text_stream("B done")],
    )
    rt = Runtime.empty(store=SqliteStore(db), runtime_id="mail-crash", providers=[provider],
                       tools=[blocking_tool])
    root = rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True))
    await root.send("Delegate b")
    await reach(lambda: list_subagents(root)[0].status == "completed")
    [notice] = subagent_mail.MAIL.pending(rt.store, root.id, "/root")
    asyncio.get_running_loop().create_task(root.send("Anything new?"))
    if phase == "streaming":
        await reach(lambda: len(provider.requests("root")) == 3)
        stream_text(control, "msg-1", "Hal")
        await reach(lambda: root.snapshot.current_text == "Hal")
    else:
        await reach(lambda: root.snapshot.status.name == "executing_tool")
    [inflight] = subagent_mail.MAIL.inflight(rt.store, root.id)
    assert inflight.key == notice.id
    say(f"READY {root.id} {notice.id}")
    await until_killed()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
