"""Issue 14.4: two processes spawning one name at once made two agents. The
store enforces the name (a unique index, added to existing files by a schema
migration) and the loser gets `AgentExists`."""

from __future__ import annotations

import sqlite3
import time

import pytest

from mentra_nb import AgentExists, Runtime, SqliteStore
from mentra_nb.store.sqlite import _MIGRATIONS, APPLICATION_ID, SCHEMA_VERSION
from tests.children import Child

PROCESSES = 4
TRIALS = 10


@pytest.mark.process
def test_processes_racing_to_spawn_one_name_make_one_agent(db_path, tmp_path, children):
    SqliteStore(db_path).close()  # created once, so no child races to create the file itself
    for _ in range(PROCESSES):
        children.append(Child("tests.store.spawn_child", str(db_path), str(tmp_path), str(TRIALS)))
    for child in children:
        child.wait_for("READY")
    for trial in range(TRIALS):
        (tmp_path / f"go-{trial}").touch()
        outcomes = [_outcome(child, trial) for child in children]
        assert sorted(o.split()[0] for o in outcomes) == ["LOST"] * (PROCESSES - 1) + ["WON"], outcomes
        assert all(o.endswith("AgentExists") for o in outcomes if o.startswith("LOST")), outcomes
    store = SqliteStore(db_path)
    names = [r.name for r in store.list_agents("nb")]
    assert sorted(names) == sorted(f"writer-{t}" for t in range(TRIALS))
    store.close()


def _outcome(child: Child, trial: int) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in child.lines:
            if line.startswith((f"WON {trial} ", f"LOST {trial} ")):
                return line
        time.sleep(0.01)
    raise AssertionError(f"child {child.pid} never reported trial {trial}: {child.lines}")


async def test_spawning_a_stored_name_is_agent_exists_and_leaves_no_lease(db_path):
    rt = Runtime.empty(store=SqliteStore(db_path))
    first = rt.spawn("writer", "test")
    other = Runtime.empty(store=SqliteStore(db_path), runtime_id="default")
    with pytest.raises(AgentExists, match=f"id {first.id}"):
        other.spawn("writer", "test")
    held = other.store._conn.execute("SELECT count(*) FROM leases WHERE token = ?",
                                     (other._leases.token,)).fetchone()[0]
    assert held == 0 and other.agents == []
    await other.aclose()
    await rt.aclose()


def test_a_file_that_already_holds_twins_is_migrated_keeping_both(db_path):
    conn = sqlite3.connect(db_path)
    for script in _MIGRATIONS[:2]:
        conn.executescript(script)
    for agent_id, created in (("aaaaaaaa1", 1), ("bbbbbbbb2", 2)):
        conn.execute(
            "INSERT INTO agents (id, runtime_id, name, model, config, status, usage, created_at,"
            " updated_at) VALUES (?, 'nb', 'writer', 'test:default', '{}', '{\"name\": \"idle\"}',"
            " '{}', ?, ?)", (agent_id, created, created))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    store = SqliteStore(db_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [(r.id, r.name) for r in store.list_agents("nb")] == [
        ("aaaaaaaa1", "writer"), ("bbbbbbbb2", "writer-bbbbbbbb")]
    store.close()
