"""Runtime-wide state (schema 4): a file written before it existed gains it in place."""

from __future__ import annotations

import sqlite3

from mentra_nb import SqliteStore
from mentra_nb.store.sqlite import _MIGRATIONS, APPLICATION_ID, SCHEMA_VERSION


def test_a_schema_3_file_gains_runtime_state_and_keeps_its_agents(db_path):
    conn = sqlite3.connect(db_path)
    for script in _MIGRATIONS[:3]:
        conn.executescript(script)
    conn.execute(
        "INSERT INTO agents (id, runtime_id, name, model, config, status, usage, created_at, updated_at)"
        " VALUES ('a1', 'nb', 'writer', 'test:default', '{}', '{\"name\": \"idle\"}', '{}', 1, 1)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    store = SqliteStore(db_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [r.name for r in store.list_agents("nb")] == ["writer"]
    assert store.load_runtime_state("nb", "mcp.servers.v1") is None
    store.save_runtime_state("nb", "mcp.servers.v1", [{"name": "time"}])
    store.close()
    assert SqliteStore(db_path).load_runtime_state("nb", "mcp.servers.v1") == [{"name": "time"}]


def test_a_schema_4_file_keeps_its_run_and_pending_turn_in_the_agents_row(db_path):
    """Schema 5 folds `runs` and `pending_turns` into `agents`: a file a crashed
    kernel left mid-stream under schema 4 still rolls back as the matrix says."""
    from mentra_nb import Runtime
    from mentra_nb.messages import Role
    from mentra_nb.status import AgentStatus

    conn = sqlite3.connect(db_path)
    for script in _MIGRATIONS[:4]:
        conn.executescript(script)
    conn.execute(
        "INSERT INTO agents (id, runtime_id, name, model, config, status, run_generation, usage,"
        " message_count, created_at, updated_at) VALUES ('a1', 'nb', 'writer', 'test:default', '{}',"
        " '{\"name\": \"streaming\"}', 3, '{}', 3, 1, 1)")
    for seq, (role, text) in enumerate([("user", "hi"), ("assistant", "hello"), ("user", "again")]):
        conn.execute("INSERT INTO messages (agent_id, seq, message, created_at) VALUES ('a1', ?, ?, 1)",
                     (seq, f'{{"role": "{role}", "content": [{{"type": "text", "text": "{text}"}}]}}'))
    conn.execute("INSERT INTO runs (agent_id, generation, baseline, assistant_committed, started_at)"
                 " VALUES ('a1', 3, 2, 0, 5)")
    conn.execute("INSERT INTO pending_turns (agent_id, turn) VALUES ('a1', ?)",
                 ('{"run_generation": 3, "current_text": "Half a"}',))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()

    store = SqliteStore(db_path)
    persisted = store.load_agent("a1")
    assert persisted is not None and persisted.run is not None
    assert (persisted.run.generation, persisted.run.baseline, persisted.run.assistant_committed,
            persisted.run.started_at) == (3, 2, False, 5)
    assert persisted.pending_turn is not None and persisted.pending_turn.current_text == "Half a"
    tables = {r[0] for r in store._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not tables & {"runs", "pending_turns"}
    store.close()

    rt = Runtime(store=SqliteStore(db_path), runtime_id="nb")
    [writer] = rt.resume()
    assert writer.status == AgentStatus.interrupted()
    assert [m.role for m in writer.history] == [Role.USER, Role.ASSISTANT]
    assert writer.resumable_turn is not None and writer.resumable_turn.text == "again"
