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
  transcript holds a delivery twice;
- the subagent mailbox: every item the child wrote is still there exactly once
  or was delivered into its recipient's durable transcript exactly once (and
  one the child saw leave was delivered), at most 256 items, none from or for
  an agent that does not exist; loading changes no item, and once the resumed
  root runs, all its mail is delivered, each item once;
- team protocol requests: each one the child wrote is there once with its
  protocol, counterparties and content, each answer it wrote is there as
  written (never back to pending), one nobody answered is still pending, each
  request and answer queued exactly one mail, no row twice; loading changes
  none; the resumed members can answer every pending one, and no answered one
  a second time.

Each seed runs on a SQLite file, on Postgres, on Postgres with the child
on "host-a" and this process on "host-b" (it cannot see the child's pid, so it
takes over once the child's short lease expires), and on Postgres through
PgBouncer in transaction mode (both processes' stores; mail listened for at the
server; the checks read the server itself).

30 seeds by default; MENTRA_CRASH_ITERATIONS=300 for the long run. A failing
test's id names its seed: MENTRA_CRASH_SEED=<seed> MENTRA_CRASH_ITERATIONS=1.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mentra_nb import AgentError, LeaseUnavailable, Runtime, tool
from mentra_nb.runtime.subagents import list_subagents
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.runtime.teams import team_of
from mentra_nb.runtime.teams._inbox import INBOX_MARKER, holds_inbox
from mentra_nb.store import open_store
from mentra_nb.testing import text_stream
from tests.children import Child, integrity
from tests.conftest import WAIT_LIMIT
from tests.reliability.conftest import crash_seeds
from tests.reliability.crash_child import END, RUNTIME_ID, sha
from tests.reliability.oracle import (
    after_recovery,
    delivered_mail,
    mailbox_problems,
    read_agents,
    read_request_mail,
    read_requests,
    read_trees,
    request_problems,
)

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


@dataclass
class Reported:
    """What the child printed it had durably done (see `crash_child`)."""

    commits: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    finished: set[tuple[str, int]] = field(default_factory=set)
    mail: list[str] = field(default_factory=list)
    submail: dict[str, dict[str, Any]] = field(default_factory=dict)  # mail id → item (+ root)
    subgone: set[tuple[str, str]] = field(default_factory=set)  # (root id, mail id)
    requesting: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    resolving: set[str] = field(default_factory=set)
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)


def _parse(lines: list[str]) -> Reported:
    seen = Reported()
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "COMMIT":
            name, generation, index, digest = rest.split()
            seen.commits.setdefault(name, []).append((int(generation), int(index), digest))
        elif kind == "RUNEND":
            name, generation = rest.split()
            seen.finished.add((name, int(generation)))
        elif kind == "MAIL":
            seen.mail.append(rest)
        elif kind == "SUBMAIL":
            item = json.loads(rest)
            seen.submail[item["id"]] = item
        elif kind == "SUBGONE":
            root, mail_id = rest.split()
            seen.subgone.add((root, mail_id))
        elif kind in ("REQUESTING", "REQUEST"):
            fields = json.loads(rest)
            (seen.requesting if kind == "REQUESTING" else seen.requests)[fields["id"]] = fields
        elif kind == "RESOLVING":
            seen.resolving.add(rest)
        elif kind == "RESOLVED":
            answer = json.loads(rest)
            seen.resolved[answer["id"]] = answer
    return seen


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


TWO_HOSTS_TTL = 1.0  # seconds: the child's lease, which the other "host" waits out


@dataclass
class Setup:
    """Where the child writes, and whether this process plays another host
    (which cannot see the child's pid, so it takes over once the lease expires)."""

    db: Path | str  # what the checks read: the file, or the database on the server
    two_hosts: bool = False
    through: str | None = None  # the URL the stores use instead of `db` (a pooler's)

    @property
    def location(self) -> Path | str:
        return self.through or self.db

    @property
    def child_env(self) -> dict[str, str]:
        if not self.two_hosts:
            return {}
        return {"MENTRA_HOST_ID": "host-a", "MENTRA_TEST_LEASE_TTL": str(TWO_HOSTS_TTL)}


@pytest.fixture(params=["sqlite", "postgres", "postgres-two-hosts", "postgres-pgbouncer"])
def setup(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    """A SQLite file; a fresh Postgres database; that database with the child on
    host-a and this process on host-b; or through PgBouncer."""
    if request.param == "sqlite":
        return Setup(tmp_path / "crash.mentra.sqlite")
    if request.param == "postgres-pgbouncer":
        pooled = request.getfixturevalue("pgbouncer_dsn")
        database = pooled.split("?", 1)[0].rsplit("/", 1)[1]
        return Setup(request.getfixturevalue("pgbouncer").server.dsn(database), through=pooled)
    two_hosts = request.param == "postgres-two-hosts"
    if two_hosts:
        monkeypatch.setenv("MENTRA_HOST_ID", "host-b")
    return Setup(request.getfixturevalue("pg_dsn"), two_hosts)


def when_free(load: Callable[[], Any], timeout: float = 60.0) -> Any:
    """`load()` (a resume), retried while a lease has not expired yet (another host's)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return load()
        except LeaseUnavailable:
            assert time.monotonic() < deadline, "the dead host's leases never expired"
            time.sleep(0.05)


async def until_leases_run_out(store: Any, agents: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    # The store's clock is this machine's (a local Postgres), so time.time() compares.
    while any((lease := store.lease_holder(a.id)) is not None
              and time.time() - lease.heartbeat_at < TWO_HOSTS_TTL for a in agents):
        assert time.monotonic() < deadline, "the dead host's leases never expired"
        await asyncio.sleep(0.05)


def sound(db: Path | str) -> bool:
    """SQLite's own integrity check of the file (Postgres checks its pages itself)."""
    return isinstance(db, str) or integrity(db) == "ok"


@pytest.mark.parametrize("seed", crash_seeds(), ids=lambda s: f"seed={s}")
async def test_a_killed_process_loses_nothing_it_committed(seed: int, setup: Setup,
                                                           children) -> None:
    db = setup.db
    child = Child("tests.reliability.crash_child", str(setup.location), str(seed), env=setup.child_env)
    children.append(child)
    child.wait_for("READY")
    await asyncio.sleep(random.Random(seed).uniform(0, KILL_WINDOW))
    child.kill()
    where = f"(seed {seed}: rerun with MENTRA_CRASH_SEED={seed} MENTRA_CRASH_ITERATIONS=1)"
    seen = _parse(child.lines)
    commits, finished, mail = seen.commits, seen.finished, seen.mail

    # --- the store as the kill left it, read through SQL alone ----------------------
    assert sound(db), where
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
    by_id = {agent.id: agent for agent in before.values()}
    durable = {agent.id: after_recovery(agent)[0] for agent in before.values()}
    trees = read_trees(db)
    problems = mailbox_problems(trees, by_id, durable, seen.submail, seen.subgone)
    assert not problems, (problems, where)
    requests = read_requests(db)
    problems = request_problems(requests, read_request_mail(db), attempted=seen.requesting,
                                written=seen.requests, answering=seen.resolving, answered=seen.resolved)
    assert not problems, (problems, where)

    # --- a fresh runtime resumes: the dead child's leases are taken over -----------------
    store = open_store(setup.location)
    rt = Runtime.empty(store=store, runtime_id=RUNTIME_ID, tools=[work, peek],
                 providers=[ReplyProvider()], lease_ttl=TWO_HOSTS_TTL if setup.two_hosts else 30)
    try:
        if setup.two_hosts:
            # Every lease of the dead host runs out first, so the resume revives everyone
            # before any await. (A lease taken after the host's last heartbeat outlives the
            # rest; tests/hosts/test_two_hosts.py revives a teammate held that way.)
            await until_leases_run_out(store, before.values())
        leads = when_free(rt.resume)
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
                when_free(lambda agent_id=agent.id: rt.resume_agent(agent_id))
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
        # Loading settles the mail the killed runs claimed: what their kept transcript
        # holds is read, the rest waits again. Nothing else of a mailbox changes.
        mailboxes = {root: tree["mailbox"] for root, tree in trees.items()}
        loaded = read_trees(db)
        for root, unread in mailboxes.items():
            read = Counter()
            for agent_id in {root, *(r.get("agent_id") for r in trees[root]["agents"].values())} - {None}:
                read += delivered_mail(durable.get(agent_id, []))
            kept = [m for m in unread if m["id"] not in read]
            now = loaded.get(root, {"mailbox": []})["mailbox"]
            assert now == [m for m in unread if m in now] and all(m in now for m in kept), (
                f"loading changed a subagent mailbox {where}")
        assert read_requests(db) == requests, f"loading changed a team request {where}"

        # --- every pending request can still be answered, an answered one not again ------
        lead = next(a for a in leads if a.name == "lead")
        team = team_of(lead)
        decided: dict[str, dict[str, Any]] = {}
        for k, row in enumerate(requests):
            approve, reason = k % 2 == 0, f"resumed verdict on {row['id']}"
            if row["status"] != "pending":
                with pytest.raises(AgentError, match="already"):
                    team.respond(row["recipient"], row["id"], not approve, reason)
                continue
            if row["recipient"] == lead.name:
                answer = (lead.approve_request if approve else lead.reject_request)(row["id"], reason)
            else:
                answer = team.respond(row["recipient"], row["id"], approve, reason)
            decided[row["id"]] = {"status": "approved" if approve else "rejected", "reason": reason}
            assert (answer.status, answer.reason) == (decided[row["id"]]["status"], reason), where
        answered = read_requests(db)
        assert [r["id"] for r in answered] == [r["id"] for r in requests], where
        for old, new in zip(requests, answered, strict=True):
            if old["status"] != "pending":
                assert new == old, f"an answered request was answered again: {old} → {new} {where}"
        problems = request_problems(
            answered, read_request_mail(db), attempted=seen.requesting, written=seen.requests,
            answering=seen.resolving | set(decided), answered={**seen.resolved, **decided})
        assert not problems, (problems, where)
        assert all(r["status"] != "pending" for r in answered), where

        # --- the teammate works through its mail; each delivery lands exactly once ----
        team_id = lead.id

        def settled() -> bool:
            mate = next((a for a in rt.agents if a.name == "mate"), None)
            return (mate is not None and not mate.is_running
                    and team_mail.MAIL.count(store, team_id, "mate", "pending") == 0
                    and team_mail.MAIL.count(store, team_id, "mate", "claimed") == 0)

        deadline = time.monotonic() + WAIT_LIMIT
        while not settled():
            assert time.monotonic() < deadline, f"the teammate never settled its mail {where}"
            await asyncio.sleep(0.02)
        delivered = Counter(_inbox_contents(read_agents(db)["mate"].transcript))
        for content in mail:
            assert delivered[content] >= 1, f"mail {content!r} was lost {where}"
        assert all(n == 1 for n in delivered.values()), f"mail delivered twice: {delivered} {where}"
        to_lead = Counter(_inbox_contents(read_agents(db)["lead"].transcript))
        assert all(n == 1 for n in to_lead.values()), f"lead mail delivered twice: {to_lead} {where}"

        # --- an interrupted turn can be replayed, and the file stays sound ---------------
        for agent in leads:
            if agent.status.name == "interrupted" and (agent.resumable_turn or agent.history):
                await agent.resume()

        # --- the resumed root reads all its mail, each item exactly once ------------------
        if boss is not None:
            await boss.send("after the restart")
            final = read_agents(db)
            tree = read_trees(db).get(boss.id, {"agents": {}, "mailbox": []})  # never delegated
            ours = {i: m for i, m in seen.submail.items() if m["root"] == boss.id}
            problems = mailbox_problems({boss.id: tree}, {a.id: a for a in final.values()},
                                        {a.id: a.transcript for a in final.values()},
                                        ours, seen.subgone)
            assert not problems, (problems, where)
            assert not [m for m in tree["mailbox"] if m["recipient"] == "/root"], (
                f"the boss ran but left its mail unread: {tree['mailbox']} {where}")
            read = delivered_mail(final["boss"].transcript)
            for item in [*ours.values(), *mailboxes.get(boss.id, [])]:
                if item["recipient"] == "/root":
                    assert read[item["id"]] == 1, f"mail {item} read {read[item['id']]} times {where}"
        assert read_requests(db) == answered, f"a request changed after it was answered {where}"
        assert sound(db), where
        for name, agent in read_agents(db).items():
            assert max(Counter(agent.raw).values(), default=1) == 1, f"{name}: duplicate {where}"
    finally:
        await rt.aclose()
        store.close()
