"""A state file written before teams existed opens and keeps team mail."""

from __future__ import annotations

import sqlite3

from mentra_nb import SqliteStore, TeamMessage
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.store.sqlite import _MIGRATIONS, APPLICATION_ID, SCHEMA_VERSION


def test_a_schema_1_file_is_migrated_in_place_keeping_its_agents(db_path):
    conn = sqlite3.connect(db_path)
    conn.executescript(_MIGRATIONS[0])
    conn.execute(
        "INSERT INTO agents (id, runtime_id, name, model, config, status, usage, created_at, updated_at)"
        " VALUES ('a1', 'nb', 'writer', 'test:default', '{}', '{\"name\": \"idle\"}', '{}', 1, 1)"
    )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()

    store = SqliteStore(db_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [r.name for r in store.list_agents("nb")] == ["writer"]
    team_mail.MAIL.queue(store, "a1", "alice", TeamMessage(sender="writer", content="hi"))
    assert team_mail.MAIL.count(store, "a1", "alice") == 1
    assert team_mail.list_requests(store, "a1") == []
    store.close()
