"""The process the crash suite kills: agents streaming, calling tools, mailing
a teammate and delegating to subagents, all at once, until SIGKILL.

    python -m tests.reliability.crash_child DB SEED

DB is a SQLite file's path or a Postgres DSN (`postgresql://…`); the lease TTL
is `MENTRA_TEST_LEASE_TTL` seconds (default 30).

It prints what it has durably done, one line each, *after* the store call
returned, so every line the test read before the kill is a promise the file
must keep (the two "-ING" lines are printed *before* a write, so the test also
knows what may be in the file and what must not be):

    READY                                   agents exist; the test may kill from now on
    COMMIT <agent> <generation> <index> <sha1 of the message JSON>
    RUNEND <agent> <generation>             a run finished (its turn is complete)
    MAIL <content>                          mail to the teammate was queued
    SUBMAIL {"root", "id", "sender", …}      subagent mail was queued (written)
    SUBGONE <root id> <mail id>             … and settled as read (its recipient's run kept it)
    REQUESTING {"id", "protocol", …}         a team request is about to be written
    REQUEST {"id", "protocol", …}            … and was written (with its mail)
    RESOLVING <request id>                  an answer is about to be written
    RESOLVED {"id", "status", "reason"}      … and was written (with its mail)
    ALLDONE                                 nothing left to do (killed while idle)

The SUBMAIL/SUBGONE and REQUEST*/RESOLV* lines come from `Reporting`,
around the store calls themselves. Usually a `boss` agent also delegates each
turn to a subagent (`kid`) that keeps working while the boss answers, and
sometimes sends the boss a message (`send_message` to `/root`); each finished
kid leaves the boss a notice. The teammate asks the lead to approve plans
(`team_request` "plan_approval"), the lead asks it for reviews ("review"),
and each answers some of what it finds in its `<team-inbox>`
(`team_respond`).

Replies come from `PlanProvider`: a deterministic function of the request,
with delays between events so that kills land mid-stream, mid-tool and
between turns. Every text reply ends with " <end>", so a half-written message
shows.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

from mentra_nb import (
    AgentConfig,
    Message,
    ModelInfo,
    ProviderRequest,
    Role,
    Runtime,
    TextBlock,
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
from mentra_nb.runtime.subagents.mail import MAIL as SUBAGENT_MAIL
from mentra_nb.runtime.teams import REQUESTS
from mentra_nb.runtime.teams._inbox import INBOX_MARKER
from mentra_nb.store import PostgresStore, SqliteStore, is_postgres_url
from mentra_nb.store.records import Claim, Put, RecordOp, Settle, Update
from mentra_nb.testing import ok_stream
from tests.children import say, until_killed

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


def verdict(request_id: str) -> str:
    """The reason the child's models give when they answer a request (unique per
    request, so a response delivered twice shows in the recipient's transcript)."""
    return f"verdict on {request_id}"


class Reporting:
    """Mixed into a store: prints what it wrote of subagent mailboxes and team
    requests, once the write returned (and, for requests, what it is about to write)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)  # type: ignore[call-arg]
        self._mail: dict[int, tuple[str, str]] = {}  # seq of subagent mail → (root id, mail id)

    def write_records(self, ops: Sequence[RecordOp], *, agent_id: str | None = None,
                      token: str | None = None) -> list[Any]:
        asked = [op for op in ops if op.kind == REQUESTS.name and isinstance(op, Put)]
        answers = [op for op in ops if op.kind == REQUESTS.name and isinstance(op, Update)]
        for op in asked:
            say(f"REQUESTING {_request_fields(op.value)}")
        for op in answers:
            say(f"RESOLVING {op.key}")
        results: list[Any] = super().write_records(  # type: ignore[misc]
            ops, agent_id=agent_id, token=token)
        for op in asked:
            say(f"REQUEST {_request_fields(op.value)}")
        for op in answers:
            say("RESOLVED " + json.dumps({"id": op.key, "status": op.value["status"],
                                          "reason": op.value["reason"]}))
        for op, result in zip(ops, results, strict=True):
            if op.kind != SUBAGENT_MAIL.kind.name:
                continue
            if isinstance(op, Put) and op.value["kind"] != "approval":  # withdrawn when answered
                self._mail[result.seq] = (op.scope, op.key)
                say("SUBMAIL " + json.dumps({"root": op.scope, **op.value}))
            elif isinstance(op, Claim):  # mail queued before this process, e.g. by a crashed one
                self._mail.update({r.seq: (r.scope, r.key) for r in result})
            elif isinstance(op, Settle):
                for seq in op.done:
                    if seq in self._mail:
                        say("SUBGONE {} {}".format(*self._mail[seq]))
        return results


def _request_fields(value: dict[str, Any]) -> str:
    keys = ("id", "team_id", "protocol", "sender", "recipient", "content")
    return json.dumps({key: value[key] for key in keys})


class ReportingSqliteStore(Reporting, SqliteStore):
    pass


class ReportingPostgresStore(Reporting, PostgresStore):
    pass


def reporting_store(location: str) -> SqliteStore | PostgresStore:
    if is_postgres_url(location):
        return ReportingPostgresStore(location)
    return ReportingSqliteStore(location)


def open_requests(messages: list[Message]) -> list[str]:
    """Ids of the requests in the `<team-inbox>` messages since the last assistant message."""
    found: list[str] = []
    for message in reversed(messages):
        if message.role is not Role.USER:
            break
        for block in message.content:
            if isinstance(block, TextBlock) and INBOX_MARKER in block.text:
                body = block.text.split(INBOX_MARKER, 1)[1].rsplit("</team-inbox>", 1)[0]
                found += [item["request_id"] for item in json.loads(body) if item["type"] == "request"]
    return found


def tool_calls(model: str, at: int, calls: list[tuple[str, str, str]]) -> list[ProviderEvent]:
    """A streamed assistant message calling (id, tool, JSON arguments) each, the
    arguments in two deltas."""
    events: list[ProviderEvent] = [MessageStarted(id=f"m{at}", model=model)]
    for index, (call_id, name, arguments) in enumerate(calls):
        half = len(arguments) // 2
        events += [ContentBlockStarted.tool_use(index, call_id, name),
                   ContentBlockDelta.tool_input_json(index, arguments[:half]),
                   ContentBlockDelta.tool_input_json(index, arguments[half:]),
                   ContentBlockStopped(index=index)]
    return [*events, MessageDelta(stop_reason="tool_use", usage=Usage(input_tokens=5, output_tokens=3)),
            MessageStopped()]


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
        at = len(messages)
        answering = [r for r in open_requests(messages) if rng.random() < 0.6]
        if request.model == "boss" and rounds == 0 and "spawn_agent" in offered:
            # The boss delegates: a child on its own model, working while the boss answers.
            task = {"task_name": f"job{at}", "message": f"job at {at}", "model": "anthropic:kid"}
            events = tool_calls(request.model, at, [(f"spawn_{at}", "spawn_agent", json.dumps(task))])
        elif answering and "team_respond" in offered:
            # Answer some of the requests that just arrived, each its own way.
            events = tool_calls(request.model, at, [
                (f"respond_{request.model}_{at}_{i}", "team_respond",
                 json.dumps({"request_id": r, "approve": rng.random() < 0.5, "reason": verdict(r)}))
                for i, r in enumerate(answering)])
        elif (request.model in ("mate", "lead") and rounds == 0 and "team_request" in offered
              and rng.random() < 0.4):
            # The teammate submits a plan to the lead; the lead asks the teammate for a review.
            to, protocol = ("lead", "plan_approval") if request.model == "mate" else ("mate", "review")
            ask = {"to": to, "protocol": protocol, "content": f"{protocol} by {request.model} at {at}"}
            events = tool_calls(request.model, at, [(f"ask_{request.model}_{at}", "team_request",
                                                     json.dumps(ask))])
        elif request.model == "kid" and rounds == 0 and "send_message" in offered and rng.random() < 0.5:
            # A child tells the boss something before it finishes.
            note = {"target": "/root", "message": f"note from a kid at {at}"}
            events = tool_calls(request.model, at, [(f"note_{at}", "send_message", json.dumps(note))])
        elif wants_tool and {"work", "peek"} <= offered:
            events = tool_calls(request.model, at, [
                (f"call_{request.model}_{at}_{i}_{rng.randrange(10**6)}",
                 rng.choice(["work", "peek"]), f'{{"value": "v{at}.{i}"}}')
                for i in range(rng.choice([1, 1, 2]))])
        else:
            words = [f"{request.model}-reply-at-{at}"] + [
                rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(5, 40))]
            text = " ".join(words) + END
            size = rng.randint(3, 12)
            parts = [text[i : i + size] for i in range(0, len(text), size)]
            events = [MessageStarted(id=f"m{at}", model=request.model),
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
            say(f"COMMIT {agent.name} {event.run_generation} {index} {sha(event.message)}")
        elif event.type == "run_finished":
            say(f"RUNEND {agent.name} {event.run_generation}")

    agent.on_event(on_event)


async def main(db: str, seed: int) -> None:
    plan = random.Random(seed)
    # A short lease when the test plays another host, which must wait for it to expire.
    ttl = float(os.environ.get("MENTRA_TEST_LEASE_TTL", "30"))
    rt = Runtime.empty(store=reporting_store(db), runtime_id=RUNTIME_ID, tools=[work, peek],
                 providers=[PlanProvider(seed)], lease_ttl=ttl)
    lead = rt.spawn("lead", "anthropic:lead")
    solos = [rt.spawn(f"solo{i}", f"anthropic:solo{i}") for i in range(plan.randint(0, 2))]
    if plan.random() < 0.7:  # a root that delegates to subagents
        solos.append(rt.spawn("boss", "anthropic:boss", config=AgentConfig(subagents=True)))
    for agent in (lead, *solos):
        report(agent)
    mate = await lead.spawn_teammate("mate", "helper", prompt="mail 0", model="anthropic:mate")
    report(mate)
    say("MAIL mail 0")
    say("READY")

    async def drive(agent: Any, turns: int, rng: random.Random) -> None:
        mail = 0
        for k in range(turns):
            await agent.send(f"{agent.name} turn {k}")
            if agent is lead and rng.random() < 0.7:
                mail += 1
                lead.send_team_message("mate", f"mail {mail}")
                say(f"MAIL mail {mail}")
            await asyncio.sleep(rng.uniform(0, 0.03))

    await asyncio.gather(
        drive(lead, plan.randint(2, 5), random.Random(f"{seed}-lead")),
        *(drive(s, plan.randint(1, 4), random.Random(f"{seed}-{s.name}")) for s in solos),
    )
    say("ALLDONE")
    await until_killed()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
