"""`python -m mentra_nb demo`: an agent streams a reply, and a second process
resumes it from the SQLite file.

Offline, with a small model of its own (`demo:reader`): it counts the words of
the sentence it is given with a real tool call, and asked about the
conversation it answers from the messages it is sent, so the second process
shows that the first one's conversation came back from the file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from mentra_nb.messages import Message, Role, Usage
from mentra_nb.providers.base import ModelInfo, ProviderRequest
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderEvent,
)
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


class DemoModel:
    """The demo's offline model: a tool call for a question about words, then an
    answer from its result; asked what came first, it quotes the first user
    message of the conversation it was sent (which a resumed agent read back
    from the state file)."""

    name = "demo"

    def __init__(self, chunk_delay: float = 0.04) -> None:
        self.chunk_delay = chunk_delay
        self._calls = 0

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id="reader", provider=self.name, display_name="The demo's offline model")]

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self._calls += 1
        yield MessageStarted(id=f"demo-{self._calls}", model=request.model)
        last = request.messages[-1]
        asks = [m.text for m in request.messages if m.role is Role.USER and m.text]
        if last.tool_results:
            text = f"That sentence has {last.tool_results[0].content} words."
        elif "first" in last.text.lower() and len(asks) > 1:
            text = f"You first asked: \u201c{asks[0]}\u201d (I read it in our conversation, {len(request.messages)} messages long)."
        elif request.tools:
            sentence = last.text.partition(":")[2].strip() or last.text
            yield ContentBlockStarted.tool_use(0, f"count-{self._calls}", "word_count")
            yield ContentBlockDelta.tool_input_json(0, json.dumps({"text": sentence}))
            yield ContentBlockStopped(index=0)
            yield MessageDelta(stop_reason="tool_use", usage=_usage(request.messages, ""))
            yield MessageStopped()
            return
        else:
            text = f"You said: {last.text}"
        yield ContentBlockStarted.text(0)
        words = text.split(" ")
        for i, word in enumerate(words):
            await asyncio.sleep(self.chunk_delay)
            yield ContentBlockDelta.text(0, word + (" " if i < len(words) - 1 else ""))
        yield ContentBlockStopped(index=0)
        yield MessageDelta(stop_reason="end_turn", usage=_usage(request.messages, text))
        yield MessageStopped()


def _usage(messages: list[Message], text: str) -> Usage:
    return Usage(input_tokens=sum(len(m.model_dump_json()) for m in messages) // 4,
                 output_tokens=max(1, len(text) // 4))


def _runtime(db: Path, *, tools: bool) -> Runtime:
    return Runtime(
        builtin_tools=False,
        store=SqliteStore(db),
        providers=[DemoModel()],
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
        agent = rt.spawn("writer", "demo:reader")
        print(f"process 1: spawned agent 'writer' on the demo's offline model, state in {db}")
        print("  streaming its reply:")
        _print_stream(agent)
        await agent.send("How many words are in this sentence: the tide comes in twice a day.")
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
