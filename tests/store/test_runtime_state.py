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
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    assert [r.name for r in store.list_agents("nb")] == ["writer"]
    assert store.load_runtime_state("nb", "mcp.servers.v1") is None
    store.save_runtime_state("nb", "mcp.servers.v1", [{"name": "time"}])
    store.close()
    assert SqliteStore(db_path).load_runtime_state("nb", "mcp.servers.v1") == [{"name": "time"}]
