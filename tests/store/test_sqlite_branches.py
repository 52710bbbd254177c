"""SQLite specifics of time travel (schema 6) and of the message table (7): forks and
rewinds add a row, never a copy; deleting collects what no one reads; schema-5 and
schema-6 files keep their transcripts; a message of a few hundred bytes takes no
overflow page; a transcript SQLite cannot join into one string is read row by row, and
rows that parse only together are refused."""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid

import psutil
import pytest

from mentra_nb import SqliteStore
from mentra_nb.errors import StoreError
from mentra_nb.messages import Message
from mentra_nb.status import AgentStatus
from mentra_nb.store.base import AgentRecord, LeaseClaim, RunRecord
from mentra_nb.store.sqlite import _MIGRATIONS, APPLICATION_ID, SCHEMA_VERSION


def _lease(store: SqliteStore, agent_id: str) -> str:
    token = uuid.uuid4().hex
    store.acquire_lease(agent_id, LeaseClaim(
        owner_id=f"o-{token}", token=token, runtime_id="nb", pid=os.getpid(), host=socket.gethostname(),
        process_started_at=psutil.Process().create_time()), ttl=30)
    return token


def _agent(store: SqliteStore, name: str, messages: int) -> tuple[str, str]:
    agent_id = uuid.uuid4().hex
    token = _lease(store, agent_id)
    store.create_agent(AgentRecord(id=agent_id, runtime_id="nb", name=name, model="test:default"),
                       token=token)
    store.begin_run(agent_id, RunRecord(generation=1, baseline=0),
                    [Message.user(f"m{i}") for i in range(messages)], status=AgentStatus.streaming(),
                    token=token)
    store.finish_run(agent_id, status=AgentStatus.finished(), token=token)
    return agent_id, token


def _fork(store: SqliteStore, source: str, at: int, name: str) -> tuple[str, str]:
    agent_id = uuid.uuid4().hex
    token = _lease(store, agent_id)
    store.fork_agent(AgentRecord(id=agent_id, runtime_id="nb", name=name, model="test:default",
                                 forked_from=source, fork_index=at), source_id=source, at=at, token=token)
    return agent_id, token


def _count(store: SqliteStore, table: str) -> int:
    return int(store._conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_a_fork_and_a_rewind_add_one_branch_row_and_copy_no_message(db_path):
    store = SqliteStore(db_path)
    source, token = _agent(store, "writer", 1000)
    assert _count(store, "messages") == 1000
    _fork(store, source, 700, "fork")
    assert (_count(store, "messages"), _count(store, "branches")) == (1000, 2)
    store.rewind(source, 10, token=token)
    assert (_count(store, "messages"), _count(store, "branches")) == (1000, 3)


def test_deleting_every_reader_of_a_branch_deletes_its_messages(db_path):
    store = SqliteStore(db_path)
    source, token = _agent(store, "writer", 10)
    fork, fork_token = _fork(store, source, 4, "fork")
    store.delete_agents([source], token=token)
    # The source's branch stays for the fork, trimmed to what the fork reads.
    assert (_count(store, "branches"), _count(store, "messages")) == (2, 4)
    store.delete_agents([fork], token=fork_token)
    assert (_count(store, "branches"), _count(store, "messages")) == (0, 0)


def test_a_schema_5_file_keeps_every_transcript_as_each_agents_first_branch(db_path):
    conn = sqlite3.connect(db_path)
    for script in _MIGRATIONS[:5]:
        conn.executescript(script)
    conn.execute(
        "INSERT INTO agents (id, runtime_id, name, model, config, status, usage, message_count,"
        " created_at, updated_at) VALUES ('a1', 'nb', 'writer', 'test:default', '{}',"
        " '{\"name\": \"idle\"}', '{}', 2, 1, 1)")
    for seq, text in enumerate(["hi", "hello"]):
        conn.execute("INSERT INTO messages (agent_id, seq, message, created_at) VALUES ('a1', ?, ?, 1)",
                     (seq, Message.user(text).model_dump_json()))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    store = SqliteStore(db_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [m.text for m in store.load_messages("a1")] == ["hi", "hello"]
    [branch] = store.list_branches("a1")
    assert (branch.id, branch.length, branch.is_head) == ("a1", 2, True)
    assert [c.run_generation for c in store.load_checkpoints("a1")] == [0, 0]  # not recorded before 6


def test_a_schema_6_file_keeps_every_branch_of_every_transcript(db_path):
    """Writer a1 (rows a0..a3) was forked at 2 as a2 (its own b2, b3), then rewound
    to 1 on branch r1 (its own r1); the fork a2 was rewound to 3, a bare pointer p2."""
    conn = sqlite3.connect(db_path)
    for script in _MIGRATIONS[:6]:
        conn.executescript(script)
    for agent, branch, count, created in (("a1", "r1", 2, 1), ("a2", "p2", 3, 2)):
        conn.execute(
            "INSERT INTO agents (id, runtime_id, name, model, config, status, usage, message_count,"
            " created_at, updated_at, branch_id) VALUES (?, 'nb', ?, 'test:default', '{}',"
            " '{\"name\": \"idle\"}', '{}', ?, ?, ?, ?)", (agent, agent, count, created, created, branch))
    # Listed children first: numbers must follow the tree, not the order rows come in.
    for branch, agent, parent, at, created in (("p2", "a2", "a2", 3, 4), ("r1", "a1", "a1", 1, 3),
                                               ("a2", "a2", "a1", 2, 2), ("a1", "a1", None, 0, 1)):
        conn.execute("INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at)"
                     " VALUES (?, ?, ?, ?, ?)", (branch, agent, parent, at, created))
    for branch, seq, text, generation in (("a1", 0, "a0", 1), ("a1", 1, "a1", 1), ("a1", 2, "a2", 2),
                                          ("a1", 3, "a3", 2), ("a2", 2, "b2", 1), ("a2", 3, "b3", 1),
                                          ("r1", 1, "r1", 3)):
        conn.execute("INSERT INTO messages (branch_id, seq, message, run_generation, created_at)"
                     " VALUES (?, ?, ?, ?, 1)", (branch, seq, Message.user(text).model_dump_json(), generation))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 6")
    conn.commit()
    conn.close()

    store = SqliteStore(db_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [m.text for m in store.load_messages("a1")] == ["a0", "r1"]
    assert [m.text for m in store.load_messages("a2")] == ["a0", "a1", "b2"]
    assert [m.text for m in store.load_messages("a2", branch_id="a2")] == ["a0", "a1", "b2", "b3"]
    assert [m.text for m in store.load_messages("a1", 1, branch_id="a1")] == ["a1", "a2", "a3"]
    assert [(c.index, c.run_generation) for c in store.load_checkpoints("a2")] == [(0, 1), (1, 1), (2, 1)]
    assert {(b.id, b.length, b.is_head) for b in store.list_branches("a1")} == {("a1", 4, False),
                                                                                ("r1", 2, True)}
    # The migrated file goes on: a turn on the bare pointer, a fork of it, a rewind.
    token = _lease(store, "a2")
    store.append_messages("a2", [Message.user("c3")], token=token)
    assert [m.text for m in store.load_messages("a2")] == ["a0", "a1", "b2", "c3"]
    fork, _ = _fork(store, "a2", 4, "again")
    assert [m.text for m in store.load_messages(fork)] == ["a0", "a1", "b2", "c3"]
    store.rewind("a2", 2, token=token)
    assert [m.text for m in store.load_messages("a2")] == ["a0", "a1"]
    assert [m.text for m in store.load_messages(fork)] == ["a0", "a1", "b2", "c3"]


def test_messages_of_a_few_hundred_bytes_take_no_overflow_pages(db_path):
    # On 2 KiB pages the old WITHOUT ROWID table kept ~490 bytes of a row on its leaf
    # and gave each longer row an overflow page of its own: this file was 3.3x larger.
    store = SqliteStore(db_path)
    text = "x" * 560
    _agent(store, "writer", 10)
    agent_id, token = _agent(store, "long", 0)
    store.append_messages(agent_id, [Message.user(text)] * 2000, token=token)
    store.vacuum()
    payload = int(store._conn.execute("SELECT sum(length(message)) FROM messages").fetchone()[0])
    assert payload > 2000 * 560
    assert os.path.getsize(db_path) < 1.4 * payload
    store.close()


def test_a_transcript_longer_than_sqlites_longest_string_is_read_row_by_row(db_path):
    store = SqliteStore(db_path)
    source, token = _agent(store, "writer", 60)
    fork, fork_token = _fork(store, source, 40, "fork")
    store.append_messages(fork, [Message.user("f40"), Message.user("f41")], token=fork_token)
    store.rewind(source, 30, token=token)
    store.append_messages(source, [Message.user("r30")], token=token)
    expected = {
        "head": [f"m{i}" for i in range(30)] + ["r30"],
        "fork": [f"m{i}" for i in range(40)] + ["f40", "f41"],
        "branch": [f"m{i}" for i in range(10, 60)],
    }

    def read_all() -> dict[str, list[str]]:
        return {
            "head": [m.text for m in store.load_messages(source)],
            "fork": [m.text for m in store.load_messages(fork)],
            "branch": [m.text for m in store.load_messages(source, 10, branch_id=source)],
        }

    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    assert read_all() == expected
    joined = [s for s in statements if "group_concat" in s]
    assert len(joined) == 3

    # Each message is ~60 bytes of JSON: each row fits, no transcript's array does.
    store._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)
    statements.clear()
    assert read_all() == expected
    assert len([s for s in statements if "group_concat" in s]) == 3  # tried, too long
    assert len([s for s in statements if "SELECT CAST(m.message AS BLOB)" in s]) == 3
    store.close()


def test_rows_that_parse_only_together_are_a_damaged_transcript(db_path):
    store = SqliteStore(db_path)
    agent_id, _ = _agent(store, "writer", 3)
    # Cut the first message short and make the second its missing end: joined, the two
    # rows are one valid message, which would pass as a transcript one message shorter.
    first, second = store._conn.execute("SELECT key FROM messages ORDER BY key LIMIT 2").fetchall()
    store._conn.execute("UPDATE messages SET message = ? WHERE key = ?",
                        ('{"role":"user","content":[{"type":"text","text":"m0"}', first[0]))
    store._conn.execute("UPDATE messages SET message = ? WHERE key = ?",
                        ('{"type":"text","text":"m1"}]}', second[0]))
    with pytest.raises(StoreError, match="damaged message of agent") as err:
        store.load_messages(agent_id)
    assert "3 stored messages decoded as 2" in str(err.value.__cause__)
    store._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100)  # and row by row
    with pytest.raises(StoreError, match="damaged message of agent"):
        store.load_messages(agent_id)
    store.close()
