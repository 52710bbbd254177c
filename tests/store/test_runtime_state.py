"""Runtime-wide state (schema 4, a table of its own until schema 9 made its rows
records): a file written before it existed migrates through it in place."""

from __future__ import annotations

import sqlite3

from mentra_nb import SqliteStore
from mentra_nb.runtime import mcp
from mentra_nb.store.sqlite import _MIGRATIONS, APPLICATION_ID, SCHEMA_VERSION


def test_a_schema_3_file_migrates_keeping_its_agents_and_gains_runtime_records(db_path):
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
    assert mcp.SERVERS.get(store, "nb") is None
    mcp.SERVERS.put(store, "nb", mcp.StoredServers(servers=[{"name": "time"}]))
    store.close()
    stored = mcp.SERVERS.get(SqliteStore(db_path), "nb")
    assert stored is not None and stored.value.servers == [{"name": "time"}]
