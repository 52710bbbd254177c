"""SQLite specifics of time travel (schema 6): forks and rewinds add a row, never a
copy; deleting collects what no one reads; a schema-5 file keeps its transcripts."""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid

import psutil

from mentra_nb import SqliteStore
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
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    assert [m.text for m in store.load_messages("a1")] == ["hi", "hello"]
    [branch] = store.list_branches("a1")
    assert (branch.id, branch.length, branch.is_head) == ("a1", 2, True)
    assert [c.run_generation for c in store.load_checkpoints("a1")] == [0, 0]  # not recorded before 6
