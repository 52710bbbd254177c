"""The process the crash suite kills: agents streaming, calling tools, mailing
a teammate and delegating to subagents, all at once, until SIGKILL.

    python -m tests.reliability.crash_child DB SEED

It prints what it has durably done, one line each, *after* the store call
returned, so every line the test read before the kill is a promise the file
must keep:

    READY                                   agents exist; the test may kill from now on
    COMMIT <agent> <generation> <index> <sha1 of the message JSON>
    RUNEND <agent> <generation>             a run finished (its turn is complete)
    MAIL <content>                          mail to the teammate was queued
    ALLDONE                                 nothing left to do (killed while idle)

Usually a `boss` agent also delegates each turn to a subagent (`kid`) that
keeps working while the boss answers. Replies come from `PlanProvider`: a deterministic function of the request, with
delays between events so that kills land mid-stream, mid-tool and between
turns. Every text reply ends with " <end>", so a half-written message shows.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import sys
from collections.abc import AsyncIterator
from typing import Any

from mentra_nb import (
    AgentConfig,
    Message,
    ModelInfo,
    ProviderRequest,
    Role,
    Runtime,
    SqliteStore,
    Usage,
    tool,
)
from mentra_nb.providers.events import (
    ContentBlockDelta,
    ContentBlockStarted,
    ContentBlockStopped,
    MessageDelta,
    MessageStarted,
    MessageStopped,
    ProviderEvent,
)
from mentra_nb.testing import ok_stream

RUNTIME_ID = "crash"
END = " <end>"


@tool
async def work(value: str) -> str:
    """Do some work that takes a moment (not read-only: runs alone)."""
    await asyncio.sleep(random.uniform(0, 0.06))
    return f"worked on {value}"


@tool(read_only=True)
async def peek(value: str) -> str:
    """Look at something (read-only: runs beside other read-only calls)."""
    await asyncio.sleep(random.uniform(0, 0.04))
    return f"peeked at {value}"


def sha(message: Message) -> str:
    return hashlib.sha1(message.model_dump_json().encode()).hexdigest()


class PlanProvider:
    """Answers as a deterministic function of (seed, model, request): text, or
    one or two tool calls, streamed with small pauses between events."""

    def __init__(self, seed: int, name: str = "anthropic") -> None:
        self.seed = seed
        self.name = name

    async def list_models(self) -> list[ModelInfo]:
        return []

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        messages = request.messages
        last = messages[-1] if messages else None
        rng = random.Random(f"{self.seed}|{request.model}|{len(messages)}|"
                           f"{sha(last) if last else ''}")
        offered = {t.name for t in request.tools}
        rounds = 0  # tool rounds since the last user text
        for m in reversed(messages):
            if m.role is Role.USER and not m.tool_results:
                break
            rounds += bool(m.tool_uses)
        wants_tool = rng.random() < (0.6 if rounds == 0 else 0.3 if rounds < 2 else 0.0)
        delay = rng.uniform(0.001, 0.006)
        if request.model == "boss" and rounds == 0 and "spawn_agent" in offered:
            # The boss delegates: a child on its own model, working while the boss answers.
            task = {"task_name": f"job{len(messages)}", "message": f"job at {len(messages)}",
                    "model": "anthropic:kid"}
            events = [MessageStarted(id=f"m{len(messages)}", model=request.model),
                      ContentBlockStarted.tool_use(0, f"spawn_{len(messages)}", "spawn_agent"),
                      ContentBlockDelta.tool_input_json(0, json.dumps(task)),
                      ContentBlockStopped(index=0),
                      MessageDelta(stop_reason="tool_use", usage=Usage(input_tokens=5, output_tokens=3)),
                      MessageStopped()]
        elif wants_tool and {"work", "peek"} <= offered:
            calls = [(f"call_{request.model}_{len(messages)}_{i}_{rng.randrange(10**6)}",
                      rng.choice(["work", "peek"]), f'{{"value": "v{len(messages)}.{i}"}}')
                     for i in range(rng.choice([1, 1, 2]))]
            events: list[ProviderEvent] = [MessageStarted(id=f"m{len(messages)}", model=request.model)]
            for index, (call_id, name, arguments) in enumerate(calls):
                half = len(arguments) // 2
                events += [ContentBlockStarted.tool_use(index, call_id, name),
                           ContentBlockDelta.tool_input_json(index, arguments[:half]),
                           ContentBlockDelta.tool_input_json(index, arguments[half:]),
                           ContentBlockStopped(index=index)]
            events += [MessageDelta(stop_reason="tool_use", usage=Usage(input_tokens=5, output_tokens=3)),
                       MessageStopped()]
        else:
            words = [f"{request.model}-reply-at-{len(messages)}"] + [
                rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(5, 40))]
            text = " ".join(words) + END
            size = rng.randint(3, 12)
            parts = [text[i : i + size] for i in range(0, len(text), size)]
            events = [MessageStarted(id=f"m{len(messages)}", model=request.model),
                      ContentBlockStarted.text(0),
                      *(ContentBlockDelta.text(0, p) for p in parts),
                      ContentBlockStopped(index=0),
                      MessageDelta(stop_reason="end_turn", usage=Usage(input_tokens=5, output_tokens=len(parts))),
                      MessageStopped()]
        async for event in ok_stream(events, delay=delay).play():
            yield event


def report(agent: Any) -> None:
    def on_event(event: Any) -> None:
        if event.type == "assistant_message_committed" or event.type == "tool_results_committed":
            index = len(agent.history) - 1
            print(f"COMMIT {agent.name} {event.run_generation} {index} {sha(event.message)}", flush=True)
        elif event.type == "run_finished":
            print(f"RUNEND {agent.name} {event.run_generation}", flush=True)

    agent.on_event(on_event)


async def main(db: str, seed: int) -> None:
    plan = random.Random(seed)
    rt = Runtime.empty(store=SqliteStore(db), runtime_id=RUNTIME_ID, tools=[work, peek],
                 providers=[PlanProvider(seed)])
    lead = rt.spawn("lead", "anthropic:lead")
    solos = [rt.spawn(f"solo{i}", f"anthropic:solo{i}") for i in range(plan.randint(0, 2))]
    if plan.random() < 0.7:  # a root that delegates to subagents
        solos.append(rt.spawn("boss", "anthropic:boss", config=AgentConfig(subagents=True)))
    for agent in (lead, *solos):
        report(agent)
    mate = await lead.spawn_teammate("mate", "helper", prompt="mail 0", model="anthropic:mate")
    report(mate)
    print("MAIL mail 0", flush=True)
    print("READY", flush=True)

    async def drive(agent: Any, turns: int, rng: random.Random) -> None:
        mail = 0
        for k in range(turns):
            await agent.send(f"{agent.name} turn {k}")
            if agent is lead and rng.random() < 0.7:
                mail += 1
                lead.send_team_message("mate", f"mail {mail}")
                print(f"MAIL mail {mail}", flush=True)
            await asyncio.sleep(rng.uniform(0, 0.03))

    await asyncio.gather(
        drive(lead, plan.randint(2, 5), random.Random(f"{seed}-lead")),
        *(drive(s, plan.randint(1, 4), random.Random(f"{seed}-{s.name}")) for s in solos),
    )
    print("ALLDONE", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
