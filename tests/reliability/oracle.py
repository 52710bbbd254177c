"""What a store must hold, read straight from SQLite or Postgres (not through the store).

`db` is a SQLite file's path or a Postgres DSN (a `str` starting with
`postgresql://`); the tables and columns are the same in both.

`read_agents` takes a read-only look at a file; `after_recovery` restates the
recovery matrix of design.md independently of `mentra_nb.runtime._recovery`, so
the crash suite checks the product against the spec, not against itself.
`read_trees`, `read_requests` and `read_request_mail` read the subagent trees
with their unread mail (records of kinds `subagents.tree`, `subagents.mail`) and
the team protocol requests with their mail
(`teams.request`, `teams.mail`);
`mailbox_problems` and `request_problems` say what in them breaks a promise
the killed process made (design.md, "Teams" and "Subagents").
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mentra_nb import INTERRUPTED_TOOL_RESULT, Message, Role, TextBlock, ToolResultBlock

__all__ = [
    "StoredAgent",
    "after_recovery",
    "delivered_mail",
    "mailbox_problems",
    "read_agents",
    "read_request_mail",
    "read_requests",
    "read_trees",
    "request_problems",
]

TREE_KIND = "subagents.tree"
SUBAGENT_MAIL_KIND = "subagents.mail"
ROOT = "/root"
# A delivered mailbox item: an internal user message that opens with its id.
_MAIL_MARKER = re.compile(r'^<subagent_(?:message|update) id="(m[0-9a-f]{16})"')
REQUEST_FIELDS = ("team_id", "protocol", "sender", "recipient", "content")


@dataclass
class StoredAgent:
    id: str
    name: str
    kind: str
    status: dict
    message_count: int
    transcript: list[Message]
    raw: list[str]  # the JSON rows, byte for byte
    seqs: list[int]
    run: tuple[int, int, bool] | None  # generation, baseline, assistant_committed
    pending: dict | None
    resumable: Message | None = None
    problems: list[str] = field(default_factory=list)


class _Reader:
    """A read-only cursor-like handle with SQLite's `?` placeholders on either engine."""

    def __init__(self, db: Path | str) -> None:
        self.postgres = isinstance(db, str) and db.startswith("postgresql://")
        if self.postgres:
            import psycopg
            from psycopg.types.string import TextLoader

            self.conn: Any = psycopg.connect(str(db), autocommit=True)
            # JSON columns come back as their text, as SQLite's do.
            self.conn.adapters.register_loader("json", TextLoader)
        else:
            self.conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

    @property
    def chain_rows(self) -> str:
        """(seq, message) of every branch in `chain` below its `below`, in order."""
        if self.postgres:
            return ("SELECT m.seq, m.message FROM chain JOIN messages m"
                    " ON m.branch_id = chain.branch AND m.seq < chain.below ORDER BY m.seq")
        # SQLite schema 7: a row's key is its branch's number << 32 plus its position.
        return ("SELECT m.key & 4294967295, m.message FROM chain JOIN branches cb ON cb.id = chain.branch"
                " JOIN messages m ON m.key >= cb.number << 32 AND m.key < (cb.number << 32) + chain.below"
                " ORDER BY m.key")

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        if self.postgres:
            sql = sql.replace("?", "%s").replace("rowid", "ord")
        return self.conn.execute(sql, params)



@contextmanager
def _reading(db: Path | str) -> Iterator[_Reader]:
    reader = _Reader(db)
    try:
        yield reader
    finally:
        reader.conn.close()


def read_agents(db: Path | str) -> dict[str, StoredAgent]:
    with _reading(db) as conn:
        agents: dict[str, StoredAgent] = {}
        for agent_id, name, kind, status, count in conn.execute(
            "SELECT id, name, kind, status, message_count FROM agents ORDER BY created_at, rowid"
        ):
            # The head branch and the branches it was forked or rewound from (schema 6).
            rows = conn.execute(
                "WITH RECURSIVE chain(branch, below) AS ("
                # Written for SQLite and Postgres alike (no min(a, b), no LEAST).
                " SELECT branch_id, 2147483647 FROM agents WHERE id = ?"
                " UNION ALL SELECT b.parent_id, CASE WHEN b.fork_index < chain.below"
                " THEN b.fork_index ELSE chain.below END FROM branches b"
                " JOIN chain ON b.id = chain.branch WHERE b.parent_id IS NOT NULL)"
                f" {conn.chain_rows}",
                (agent_id,),
            ).fetchall()
            run = conn.execute(
                "SELECT run_generation, run_baseline, run_assistant_committed FROM agents"
                " WHERE id = ? AND run_baseline IS NOT NULL",
                (agent_id,),
            ).fetchone()
            pending = conn.execute(
                "SELECT pending_turn FROM agents WHERE id = ? AND pending_turn IS NOT NULL",
                (agent_id,),
            ).fetchone()
            resumable = conn.execute(
                "SELECT message FROM resumable_turns WHERE agent_id = ?", (agent_id,)
            ).fetchone()
            stored = StoredAgent(
                id=agent_id, name=name, kind=kind, status=json.loads(status), message_count=count,
                transcript=[], raw=[r[1] for r in rows], seqs=[r[0] for r in rows],
                run=(run[0], run[1], bool(run[2])) if run else None,
                pending=json.loads(pending[0]) if pending else None,
                resumable=Message.model_validate_json(resumable[0]) if resumable else None,
            )
            for seq, raw in rows:
                try:
                    stored.transcript.append(Message.model_validate_json(raw))
                except ValueError as err:
                    stored.problems.append(f"message {seq} of {name} is not a valid message: {err}")
            agents[name] = stored
        return agents


def after_recovery(agent: StoredAgent) -> tuple[list[Message], str, Message | None]:
    """(transcript, status name, resumable turn) the matrix demands once `agent` is loaded."""
    transcript = list(agent.transcript)
    if agent.run is None:
        return transcript, agent.status["name"], agent.resumable
    _generation, baseline, committed = agent.run
    if agent.pending is not None or not committed:
        opening = transcript[baseline] if baseline < len(transcript) else None
        resumable = opening if opening is not None and opening.role is Role.USER else None
        return transcript[:baseline], "interrupted", resumable
    for index in range(len(transcript) - 1, -1, -1):
        if transcript[index].role is Role.ASSISTANT:
            answered = {r.tool_use_id for m in transcript[index + 1 :] for r in m.tool_results}
            missing = [u.id for u in transcript[index].tool_uses if u.id not in answered]
            if missing:
                transcript.append(Message(role=Role.USER, content=[
                    ToolResultBlock(tool_use_id=i, content=INTERRUPTED_TOOL_RESULT, is_error=True)
                    for i in missing]))
            break
    return transcript, "interrupted", agent.resumable


# --- subagent trees and their mailbox ------------------------------------------------


def read_trees(db: Path | str) -> dict[str, dict[str, Any]]:
    """Root agent id → its stored subagent tree {"agents": {path: record}, "mailbox": [item]},
    where the mailbox is the tree's mail not read yet (pending, or claimed by a run
    that has not settled it), oldest first."""
    with _reading(db) as conn:
        rows = conn.execute("SELECT scope, value FROM records WHERE kind = ?", (TREE_KIND,)).fetchall()
        trees = {agent_id: {"mailbox": [], **json.loads(value)} for agent_id, value in rows}
        mail = conn.execute("SELECT scope, value FROM records WHERE kind = ? AND state <> 'done' "
                            "ORDER BY seq", (SUBAGENT_MAIL_KIND,)).fetchall()
        for root_id, value in mail:
            trees.setdefault(root_id, {"agents": {}, "mailbox": []})["mailbox"].append(json.loads(value))
        return trees


def delivered_mail(transcript: list[Message]) -> Counter[str]:
    """How many times each mailbox item was delivered into `transcript`."""
    found: Counter[str] = Counter()
    for message in transcript:
        if message.role is Role.USER:
            for block in message.content:
                if isinstance(block, TextBlock) and (match := _MAIL_MARKER.match(block.text)):
                    found[match.group(1)] += 1
    return found


def _recipient_id(root_id: str, tree: dict[str, Any], path: str) -> str | None:
    if path == ROOT:
        return root_id
    record = tree["agents"].get(path)
    return record.get("agent_id") if record else None


def mailbox_problems(
    trees: dict[str, dict[str, Any]], agents: dict[str, StoredAgent],
    transcripts: dict[str, list[Message]], reported: dict[str, dict[str, Any]],
    gone: set[tuple[str, str]],
) -> list[str]:
    """What breaks the mailbox contract: an item twice, an item from or for an agent that does not exist, mail delivered twice into a
    transcript, or a reported item neither in the mailbox nor delivered.

    `agents`: the stored agents by id; `transcripts`: the durable transcript of
    each (after recovery) by id; `reported`: the items the killed process wrote,
    by id, with their root; `gone`: (root, id) of those it wrote as removed.
    """
    problems: list[str] = []
    for root_id, tree in trees.items():
        mailbox = tree.get("mailbox", [])
        if root_id not in agents:
            problems.append(f"a subagent tree for agent {root_id}, which does not exist")
        twice = [i for i, n in Counter(m["id"] for m in mailbox).items() if n > 1]
        if twice:
            problems.append(f"mailbox items stored twice: {twice}")
        for item in mailbox:
            for end in (item["sender"], item["recipient"]):
                agent = agents.get(_recipient_id(root_id, tree, end) or "")
                if agent is None or (end != ROOT and agent.kind != "subagent"):
                    problems.append(f"mailbox item {item['id']} names `{end}`, which is no agent of "
                                    f"the tree of {root_id}")
        for agent_id in {root_id, *(r.get("agent_id") for r in tree["agents"].values())} - {None}:
            twice = {i: n for i, n in delivered_mail(transcripts.get(agent_id, [])).items() if n > 1}
            if twice:
                problems.append(f"mail delivered twice into the transcript of {agent_id}: {twice}")
    for mail_id, item in reported.items():
        tree = trees.get(item["root"])
        if tree is None:
            problems.append(f"the tree of {item['root']} holding mail {mail_id} was lost")
            continue
        stored = [m for m in tree.get("mailbox", []) if m["id"] == mail_id]
        recipient = _recipient_id(item["root"], tree, item["recipient"])
        delivered = delivered_mail(transcripts.get(recipient or "", []))[mail_id]
        expected = {k: v for k, v in item.items() if k != "root"}
        if stored and stored[0] != expected:
            problems.append(f"mailbox item {mail_id} changed: {stored[0]} != {expected}")
        if (item["root"], mail_id) in gone and (stored or delivered != 1):
            problems.append(f"mail {mail_id} was taken out of the mailbox (stored {len(stored)}) "
                            f"but delivered {delivered} times")
        if not stored and not delivered:
            problems.append(f"mail {mail_id} ({item['sender']} → {item['recipient']}) was lost")
    return problems


# --- team protocol requests ------------------------------------------------------------


def read_requests(db: Path | str) -> list[dict[str, Any]]:
    """Every team request row, oldest first."""
    with _reading(db) as conn:
        rows = conn.execute("SELECT value FROM records WHERE kind = 'teams.request' ORDER BY seq")
        return [json.loads(raw) for (raw,) in rows]


def read_request_mail(db: Path | str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(type, request id) → the team mail queued for it ("request" or "response")."""
    with _reading(db) as conn:
        found: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for (raw,) in conn.execute("SELECT value FROM records WHERE kind = 'teams.mail' ORDER BY seq"):
            message = json.loads(raw)
            if message.get("request_id"):
                found.setdefault((message["type"], message["request_id"]), []).append(message)
        return found


def request_problems(
    rows: list[dict[str, Any]], mail: dict[tuple[str, str], list[dict[str, Any]]], *,
    attempted: dict[str, dict[str, Any]], written: dict[str, dict[str, Any]],
    answering: set[str], answered: dict[str, dict[str, Any]],
) -> list[str]:
    """What breaks the request contract after a kill.

    `attempted`/`written`: requests the killed process was about to write / had
    written (id → fields); `answering`/`answered`: ids it was about to answer /
    answers it had written (id → status, reason). A written request is there
    once with its fields; a written answer is there as written; a request
    nobody tried to answer is still pending; a request and its answer each
    queued exactly one piece of mail; no row the process did not ask for, and
    no request twice.
    """
    problems: list[str] = []
    by_id: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_id.setdefault(row["id"], []).append(row)
        if row["id"] not in attempted:
            problems.append(f"request {row['id']} is in the file but was never made")
        if row["status"] not in ("pending", "approved", "rejected"):
            problems.append(f"request {row['id']} has status {row['status']!r}")
        if (row["status"] == "pending") != (row["resolved_at"] is None):
            problems.append(f"request {row['id']} is {row['status']} with resolved_at {row['resolved_at']}")
        if row["status"] != "pending" and row["id"] not in answering:
            problems.append(f"request {row['id']} is {row['status']}, but nobody answered it")
        requests = mail.get(("request", row["id"]), [])
        if len(requests) != 1:
            problems.append(f"request {row['id']} queued {len(requests)} request mails")
        responses = mail.get(("response", row["id"]), [])
        if len(responses) != (row["status"] != "pending"):
            problems.append(f"request {row['id']} is {row['status']} with {len(responses)} response mails")
        for response in responses:
            if response.get("approve") != (row["status"] == "approved") or (response["content"] or None) != row["reason"]:
                problems.append(f"the response mail of {row['id']} ({response}) disagrees with the "
                                f"row: {row['status']} {row['reason']!r}")
    for (_kind, request_id), _messages in mail.items():
        if request_id not in by_id:
            problems.append(f"team mail for request {request_id}, which does not exist")
    copies = Counter(tuple(row[k] for k in REQUEST_FIELDS) for row in rows)
    problems += [f"request stored {n} times: {key}" for key, n in copies.items() if n > 1]
    for request_id, fields in written.items():
        found = by_id.get(request_id, [])
        if len(found) != 1:
            problems.append(f"request {request_id} was written, but the file has {len(found)} rows for it")
            continue
        stored = {k: found[0][k] for k in REQUEST_FIELDS}
        if stored != {k: fields[k] for k in REQUEST_FIELDS}:
            problems.append(f"request {request_id} changed: {stored} != {fields}")
    for request_id, answer in answered.items():
        found = by_id.get(request_id, [])
        if found and (found[0]["status"], found[0]["reason"]) != (answer["status"], answer["reason"]):
            problems.append(f"request {request_id} was {answer['status']} ({answer['reason']!r}) but "
                            f"the file says {found[0]['status']} ({found[0]['reason']!r})")
    return problems
