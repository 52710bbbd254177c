"""`python -m mentra_nb demo`: an agent streams a reply, and a second process
resumes it from the SQLite file. Offline: it uses the deterministic `test` model."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from mentra_nb.messages import Role
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime._agent import Agent
from mentra_nb.runtime._runtime import Runtime
from mentra_nb.runtime.events import AgentEvent
from mentra_nb.runtime.tools import tool
from mentra_nb.store.sqlite import SqliteStore

__all__ = ["run_demo"]

RUNTIME_ID = "demo"


@tool(read_only=True)
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def _runtime(db: Path, *, tools: bool) -> Runtime:
    # No built-in file tools: the offline test model calls every tool it is
    # offered, and the demo shows exactly one call.
    return Runtime(
        builtin_tools=False,
        store=SqliteStore(db),
        providers=[TestProvider(chunk_delay=0.04)],
        tools=[word_count] if tools else [],
        runtime_id=RUNTIME_ID,
    )


def _print_stream(agent: Agent) -> None:
    def show(event: AgentEvent) -> None:
        if event.type == "text_delta":
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif event.type == "tool_execution_finished":
            print(f"  [tool call: {event.name} -> {event.content}]")
            sys.stdout.write("  > ")
        elif event.type == "run_finished":
            print()

    agent.on_event(show)


async def _first_process(db: Path) -> str:
    async with _runtime(db, tools=True) as rt:
        agent = rt.spawn("writer", "test")
        print(f"process 1: spawned agent 'writer' on the offline test model, state in {db}")
        print("  streaming its reply:")
        _print_stream(agent)
        await agent.send("Please count the words in this sentence.")
        print(f"  status: {agent.snapshot.status}, {len(agent.history)} messages committed")
        return agent.id


async def _second_process(db: Path) -> None:
    async with _runtime(db, tools=False) as rt:
        [agent] = rt.resume(RUNTIME_ID)
        print(f"process 2 resumed '{agent.name}' from {db.name}: status {agent.snapshot.status},")
        print(f"  {len(agent.history)} messages, {agent.usage.total_tokens} tokens used so far:")
        for message in agent.history:
            who = "user     " if message.role is Role.USER else "assistant"
            parts = [b.type if b.type != "text" else repr(b.text) for b in message.content]
            print(f"    {who} {', '.join(parts)}")
        print("  sending a follow-up; streaming:")
        sys.stdout.write("  > ")
        _print_stream(agent)
        await agent.send("Thanks! What did I ask you first?")
        print(f"  now {len(agent.history)} messages; state kept in {db}")


def run_demo(db: str | None = None, *, resume_only: bool = False) -> int:
    if resume_only:
        asyncio.run(_second_process(Path(db or "")))
        return 0
    folder = Path(db).parent if db else Path(tempfile.mkdtemp(prefix="mentra-demo-"))
    path = Path(db) if db else folder / "demo.mentra.sqlite"
    if path.exists():
        print(f"{path} already exists; pass --db with a new path", file=sys.stderr)
        return 2
    asyncio.run(_first_process(path))
    print()
    # A genuinely separate process: nothing but the SQLite file carries the agent over.
    return subprocess.call([sys.executable, "-m", "mentra_nb", "demo", "--resume", "--db", str(path)])
