"""SIGKILL at a random moment, then a fresh process resumes: nothing committed is lost.

A child process (`crash_child.py`) drives a lead, 0-2 solo agents, a
teammate woken by mail and usually a root delegating to subagents, all
streaming and calling tools at once; it is killed
at a random moment after it is ready. This process (which never had the file
open) then checks the file straight through SQLite and resumes everything:

- `PRAGMA integrity_check` is ok, before and after the resume;
- every message the child reported as committed is in the file, at its index,
  byte for byte; every turn that finished before the kill is there exactly once;
- no half-written message: every row parses, every text reply is whole;
- the cut turn follows the recovery matrix (restated in `oracle.py`), for leads,
  teammates and subagents alike; a subagent nobody loaded yet is left untouched
  and no subagent is still active after the restart;
- team mail queued before the kill is delivered at least once, and no durable
  transcript holds a delivery twice.

30 seeds by default; MENTRA_CRASH_ITERATIONS=300 for the long run. A failing
test's id names its seed: MENTRA_CRASH_SEED=<seed> MENTRA_CRASH_ITERATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from mentra_nb import Runtime, SqliteStore, tool
from mentra_nb.runtime.subagents import list_subagents
from mentra_nb.runtime.team_inbox import INBOX_MARKER, holds_inbox
from mentra_nb.testing import text_stream
from tests.children import Child, integrity
from tests.reliability.conftest import crash_seeds
from tests.reliability.crash_child import END, RUNTIME_ID, sha
from tests.reliability.oracle import after_recovery, read_agents

pytestmark = [pytest.mark.reliability, pytest.mark.process]

KILL_WINDOW = 0.8  # seconds after READY; the child's work takes about 0.2-0.7 s


class ReplyProvider:
    """The resuming process's model: a whole text reply to anything, never a tool
    call (the test model would call every tool again on each subagent update)."""

    name = "anthropic"

    async def list_models(self) -> list:
        return []

    def stream(self, request):
        return text_stream(f"resumed reply {len(request.messages)}{END}", chunks=3).play()


@tool
async def work(value: str) -> str:
    """Do some work."""
    return f"worked on {value}"


@tool(read_only=True)
async def peek(value: str) -> str:
    """Look at something."""
    return f"peeked at {value}"


def _parse(lines: list[str]) -> tuple[dict[str, list[tuple[int, int, str]]], set[tuple[str, int]], list[str]]:
    commits: dict[str, list[tuple[int, int, str]]] = {}
    finished: set[tuple[str, int]] = set()
    mail: list[str] = []
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "COMMIT":
            name, generation, index, digest = rest.split()
            commits.setdefault(name, []).append((int(generation), int(index), digest))
        elif kind == "RUNEND":
            name, generation = rest.split()
            finished.add((name, int(generation)))
        elif kind == "MAIL":
            mail.append(rest)
    return commits, finished, mail


def _inbox_contents(messages) -> list[str]:
    contents = []
    for message in messages:
        if not holds_inbox(message):
            continue
        for block in message.content:
            text = getattr(block, "text", None) or getattr(block, "content", "")
            if INBOX_MARKER in text:
                body = text.split(INBOX_MARKER, 1)[1].rsplit("</team-inbox>", 1)[0]
                contents += [item["content"] for item in json.loads(body)]
    return contents


@pytest.mark.parametrize("seed", crash_seeds(), ids=lambda s: f"seed={s}")
async def test_a_killed_process_loses_nothing_it_committed(seed: int, tmp_path: Path, children) -> None:
    db = tmp_path / "crash.mentra.sqlite"
    child = Child("tests.reliability.crash_child", str(db), str(seed))
    children.append(child)
    child.wait_for("READY")
    await asyncio.sleep(random.Random(seed).uniform(0, KILL_WINDOW))
    child.kill()
    where = f"(seed {seed}: rerun with MENTRA_CRASH_SEED={seed} MENTRA_CRASH_ITERATIONS=1)"
    commits, finished, mail = _parse(child.lines)

    # --- the file as the kill left it, read through SQLite alone -------------------
    assert integrity(db) == "ok", where
    before = read_agents(db)
    for name, agent in before.items():
        assert not agent.problems, (agent.problems, where)
        assert agent.seqs == list(range(len(agent.seqs))), f"{name}: gaps in seq {agent.seqs} {where}"
        assert agent.message_count == len(agent.raw), f"{name}: message_count is off {where}"
        for message in agent.transcript:
            if message.role.value == "assistant" and message.text:
                assert message.text.endswith(END), f"{name}: half-written reply {message.text!r} {where}"
        for generation, index, digest in commits.get(name, []):
            assert index < len(agent.transcript) and sha(agent.transcript[index]) == digest, (
                f"{name}: message {index} of run {generation} was reported committed but is "
                f"not in the file {where}")

    # --- a fresh runtime resumes: the dead child's leases are taken over at once -----
    store = SqliteStore(db)
    rt = Runtime.empty(store=store, runtime_id=RUNTIME_ID, tools=[work, peek],
                 providers=[ReplyProvider()])
    try:
        leads = rt.resume()
        assert {a.name for a in leads} == {n for n, a in before.items() if a.kind == "agent"}, where
        # Checked before any await: revived teammates have not run yet. Subagents load
        # lazily: until then their rows stay exactly as the kill left them.
        live = {a.id for a in rt.agents}
        untouched = read_agents(db)
        for name, agent in before.items():
            if agent.id not in live:
                assert agent.kind == "subagent", f"{name} ({agent.kind}) was not resumed {where}"
                now = untouched[name]
                assert (now.raw, now.run, now.pending) == (agent.raw, agent.run, agent.pending), (
                    f"{name}: a subagent nobody loaded was changed {where}")
                rt.resume_agent(agent.id)
        after = read_agents(db)
        for name, agent in before.items():
            transcript, status, resumable = after_recovery(agent)
            now = after[name]
            assert now.transcript == transcript, f"{name}: recovery broke the matrix {where}"
            assert now.status["name"] == status, f"{name}: status {now.status} != {status} {where}"
            assert now.run is None and now.pending is None, f"{name}: run left open {where}"
            assert now.resumable == resumable, f"{name}: resumable turn {where}"
            for generation, index, digest in commits.get(name, []):
                if (name, generation) in finished:
                    assert sha(now.transcript[index]) == digest, (
                        f"{name}: a finished turn lost message {index} {where}")
            counts = Counter(now.raw)
            assert max(counts.values(), default=1) == 1, f"{name}: a message is stored twice {where}"
        boss = next((a for a in leads if a.name == "boss"), None)
        if boss is not None:
            active = [i for i in list_subagents(boss) if i.status in ("pending_init", "running")]
            assert not active, f"subagents still active after a restart: {active} {where}"

        # --- the teammate works through its mail; each delivery lands exactly once ----
        lead = next(a for a in leads if a.name == "lead")
        team_id = lead.id

        def settled() -> bool:
            mate = next((a for a in rt.agents if a.name == "mate"), None)
            return (mate is not None and not mate.is_running
                    and store.count_team_mail(team_id, "mate", "pending") == 0
                    and store.count_team_mail(team_id, "mate", "inflight") == 0)

        deadline = time.monotonic() + 20
        while not settled():
            assert time.monotonic() < deadline, f"the teammate never settled its mail {where}"
            await asyncio.sleep(0.02)
        delivered = Counter(_inbox_contents(read_agents(db)["mate"].transcript))
        for content in mail:
            assert delivered[content] >= 1, f"mail {content!r} was lost {where}"
        assert all(n == 1 for n in delivered.values()), f"mail delivered twice: {delivered} {where}"

        # --- an interrupted turn can be replayed, and the file stays sound ---------------
        for agent in leads:
            if agent.status.name == "interrupted" and (agent.resumable_turn or agent.history):
                await agent.resume()
        assert integrity(db) == "ok", where
        for name, agent in read_agents(db).items():
            assert max(Counter(agent.raw).values(), default=1) == 1, f"{name}: duplicate {where}"
    finally:
        await rt.aclose()
        store.close()
