"""A Postgres schema written before records (schema 3, by the statements that code
ran) opens, and what teams, subagents and MCP kept in tables and keys of their own
reads back through their records, as a SQLite file's does (test_schema7_file.py)."""

from __future__ import annotations

import psycopg

from mentra_nb.runtime import mcp
from mentra_nb.runtime.subagents import stored_tree
from mentra_nb.runtime.teams import MEMBERS
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.store import PostgresStore
from mentra_nb.store._sql import statements
from mentra_nb.store.postgres import _MIGRATIONS, POSTGRES_SCHEMA_VERSION


def _schema_3(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TABLE mentra_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO mentra_schema VALUES (3)")
        for script in _MIGRATIONS[:3]:
            for statement in statements(script):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO agents (id, runtime_id, name, model, config, status, kind, parent_id, usage,"
            " created_at, updated_at, branch_id) VALUES"
            " ('lead1', 'nb', 'lead', 'test:default', '{}', '{\"name\": \"idle\"}', 'agent', NULL, '{}', 1, 1, 'lead1'),"
            " ('alice1', 'nb', 'alice', 'test:default', '{}', '{\"name\": \"idle\"}', 'teammate', 'lead1', '{}', 2, 2,"
            " 'alice1')")
        conn.execute("INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at) VALUES"
                     " ('lead1', 'lead1', NULL, 0, 1), ('alice1', 'alice1', NULL, 0, 2)")
        conn.execute(
            "INSERT INTO team_mail (team_id, recipient, message, state, claimed_by, transcript_seq,"
            " created_at, updated_at) VALUES"
            """ ('lead1', 'alice', '{"type": "message", "from": "lead", "content": "done one"}', 'acked',"""
            " 'alice1', 2, 3, 3),"
            """ ('lead1', 'alice', '{"type": "message", "from": "lead", "content": "held"}', 'inflight',"""
            " 'alice1', 2, 4, 4),"
            """ ('lead1', 'lead', '{"type": "request", "from": "alice", "content": "plan",
                 "request_id": "req-1", "protocol": "plan_approval"}', 'pending', NULL, NULL, 5, 5)""")
        conn.execute(
            "INSERT INTO team_requests (id, team_id, protocol, sender, recipient, content, status,"
            " created_at, resolved_at, reason) VALUES"
            " ('req-1', 'lead1', 'plan_approval', 'alice', 'lead', 'plan', 'pending', 5, NULL, NULL),"
            " ('req-0', 'lead1', 'shutdown', 'lead', 'alice', 'stop', 'rejected', 4, 6, 'busy')")
        conn.execute(
            "INSERT INTO state (agent_id, key, value) VALUES"
            """ ('lead1', 'subagents.v1', '{"agents": {}, "mailbox": []}'),"""
            """ ('alice1', 'team.member.v1', '{"status": {"name": "idle", "error": null}, "spawned_at": 2.0}'),"""
            """ ('lead1', 'approvals.v1', '{"approved": []}')""")
        conn.execute("INSERT INTO runtime_state (runtime_id, key, value) VALUES"
                     """ ('nb', 'mcp.servers.v1', '[{"name": "time"}]')""")


def test_a_schema_3_database_opens_and_its_feature_rows_become_records(pg_dsn: str) -> None:
    _schema_3(pg_dsn)
    store = PostgresStore(pg_dsn)
    try:
        [(version,)] = store._read("SELECT version FROM mentra_schema")
        assert version == POSTGRES_SCHEMA_VERSION
        assert [a.name for a in store.list_agents("nb")] == ["lead", "alice"]
        mail = team_mail.MAIL.list(store, "lead1")
        assert [(m.recipient, m.message.content, m.state, m.claimed_by, m.transcript_seq) for m in mail] == [
            ("alice", "done one", "done", "alice1", 2),
            ("alice", "held", "claimed", "alice1", 2),
            ("lead", "plan", "pending", None, None),
        ]
        assert [m.id for m in team_mail.MAIL.inflight(store, "alice1")] == [mail[1].id]
        requests = team_mail.list_requests(store, "lead1")
        # Oldest first, as the table was read (created_at, then insertion).
        assert [(r.id, r.status, r.reason, r.created_at) for r in requests] == [
            ("req-0", "rejected", "busy", 4.0), ("req-1", "pending", None, 5.0)]
        member = MEMBERS.get(store, "alice1")
        assert member is not None and member.value.spawned_at == 2.0
        assert stored_tree(store, "lead1") == {"agents": {}, "mailbox": []}
        servers = mcp.SERVERS.get(store, "nb")
        assert servers is not None and servers.value.servers == [{"name": "time"}]
        assert store.load_state("lead1", "approvals.v1") == {"approved": []}
        assert store.load_state("lead1", "subagents.v1") is None
        tables = {r[0] for r in store._read(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}
        assert not tables & {"team_mail", "team_requests", "runtime_state"}
        # A request of the old schema is answered once, through its record.
        answer = team_mail.TeamMessage(type="response", sender="lead", content="ok", request_id="req-1")
        assert team_mail.resolve_request(store, "lead1", "req-1", approve=True, reason=None,
                                         response=answer) is not None
        assert team_mail.resolve_request(store, "lead1", "req-1", approve=True, reason=None,
                                         response=answer) is None
    finally:
        store.close()
