"""PostgresStore passes the store conformance suite against a real Postgres server and
through PgBouncer in transaction mode, and reads a transcript without reading other
agents' messages."""

from __future__ import annotations

import pytest

from mentra_nb.store.postgres import PostgresStore
from mentra_nb.testing.store_conformance import StoreConformance


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def store(self, pg_dsn):
        s = PostgresStore(pg_dsn)
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, pg_dsn):
        opened: list[PostgresStore] = []

        def open_again() -> PostgresStore:
            opened.append(PostgresStore(pg_dsn))
            return opened[-1]

        yield open_again
        for s in opened:
            s.close()


class TestPostgresStoreBehindPgBouncer(TestPostgresStore):
    """Through a real PgBouncer in transaction mode, with the store's default settings
    (a prepared statement would exist in one server session and be missing in the
    next) and mail listened for at the server (`?listen_url=`)."""

    @pytest.fixture
    def pg_dsn(self, pgbouncer_dsn):
        return pgbouncer_dsn


def test_reading_a_transcript_reads_no_other_agents_messages(pg_dsn, monkeypatch):
    """Every transcript read (messages, checkpoints, an agent with its transcript; a
    head, a fork through its source) reads each branch as one range of the (branch_id,
    seq) key. Written as a join, the planner scanned the whole messages table for each,
    so a read took as long as every agent's messages together."""
    import psycopg

    from mentra_nb.testing.store_conformance import _conversation, _fork

    store = PostgresStore(pg_dsn)
    try:
        agents = [_conversation(store, 200, name=f"writer{i}")[0] for i in range(20)]
        fork, _ = _fork(store, agents[0], 150)
        with store._connection() as conn:
            conn.execute("ANALYZE")
        reads: list[tuple[str, tuple]] = []
        execute = psycopg.Connection.execute

        def recording(self, query, params=None, **kwargs):
            if "chain" in str(query):
                reads.append((query, params))
            return execute(self, query, params, **kwargs)

        monkeypatch.setattr(psycopg.Connection, "execute", recording)
        for agent_id in (agents[3], fork):
            store.load_messages(agent_id)
            store.load_messages(agent_id, 100, 160)
            store.load_checkpoints(agent_id)
            store.load_agent(agent_id)
        monkeypatch.undo()
        assert len(reads) == 8
        with psycopg.connect(pg_dsn) as conn:
            for query, params in reads:
                plan = conn.execute(f"EXPLAIN (FORMAT JSON) {query}", params).fetchone()[0][0]["Plan"]
                scans = [node["Node Type"] for node in _nodes(plan) if node.get("Relation Name") == "messages"]
                assert scans and "Seq Scan" not in scans, (query, scans)
    finally:
        store.close()


def _nodes(plan: dict) -> list[dict]:
    return [plan, *(node for child in plan.get("Plans", []) for node in _nodes(child))]
