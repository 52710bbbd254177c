"""What only a real SQLite file can show: refusing foreign files untouched,
journal modes, JSON-only rows, and bytes written per turn."""

from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path

import pytest

from mentra_nb import Runtime, SqliteStore, StoreError, tool
from mentra_nb.store import sqlite as sqlite_module
from mentra_nb.store.sqlite import SCHEMA_VERSION, is_network_filesystem


def _snapshot_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir())}


def test_a_non_sqlite_file_is_refused_and_left_untouched(db_path):
    db_path.write_bytes(b"name,value\nalpha,1\n" * 20)
    before = _snapshot_files(db_path)
    with pytest.raises(StoreError, match="not a SQLite file.*left untouched"):
        SqliteStore(db_path)
    assert _snapshot_files(db_path) == before


def test_another_applications_sqlite_database_is_refused_and_left_untouched(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    conn.commit()
    conn.close()
    before = _snapshot_files(db_path)
    with pytest.raises(StoreError, match="another application.*left untouched"):
        SqliteStore(db_path)
    assert _snapshot_files(db_path) == before  # no -wal/-shm appeared either


def test_a_store_from_a_newer_mentra_is_refused_and_left_untouched(db_path):
    SqliteStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = _snapshot_files(db_path)
    with pytest.raises(StoreError, match=f"newer mentra-nb \\(schema {SCHEMA_VERSION + 1}.*pip install -U"):
        SqliteStore(db_path)
    assert _snapshot_files(db_path) == before


def test_a_newer_schema_still_in_the_wal_is_refused(db_path):
    # The header in the main file is stale until a checkpoint; the check must look
    # through SQLite, not only at the header bytes.
    store = SqliteStore(db_path)
    store._conn.execute("PRAGMA wal_autocheckpoint = 0")
    store._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer mentra-nb"):
        SqliteStore(db_path)
    store.close()


def test_an_empty_file_becomes_a_new_store(db_path):
    db_path.touch()
    store = SqliteStore(db_path)
    assert store.list_agents() == []
    store.close()


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="folder .* does not exist"):
        SqliteStore(tmp_path / "nowhere" / "x.mentra.sqlite")


def test_reopening_our_own_file_works_and_keeps_the_schema(db_path):
    SqliteStore(db_path).close()
    store = SqliteStore(db_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    store.close()


def test_local_files_use_wal_with_synchronous_normal(db_path):
    store = SqliteStore(db_path)
    assert store.journal_mode == "wal"
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    store.close()


def test_a_network_filesystem_falls_back_to_a_rollback_journal(db_path, monkeypatch):
    monkeypatch.setattr(sqlite_module, "is_network_filesystem", lambda path: True)
    with pytest.warns(RuntimeWarning, match="network filesystem.*rollback journal"):
        store = SqliteStore(db_path)
    assert store.journal_mode == "delete"
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    store.close()


def test_network_filesystems_are_recognised_from_the_mount_table():
    mounts = (
        "/dev/vda1 / ext4 rw,relatime 0 0\n"
        "server:/export /home/ada/shared nfs4 rw,vers=4.2 0 0\n"
        "//nas/team /mnt/team\\040drive cifs rw 0 0\n"
    )
    assert is_network_filesystem("/home/ada/shared/notebooks", mounts)
    assert is_network_filesystem("/mnt/team drive/x", mounts)
    assert not is_network_filesystem("/home/ada/local", mounts)
    assert not is_network_filesystem("/home/ada/shared-not", mounts)


async def test_rows_hold_json_only(db_path):
    rt = Runtime.empty(store=SqliteStore(db_path), runtime_id="nb")
    agent = rt.spawn("writer", "test")
    await agent.send("hello")
    await rt.aclose()
    conn = sqlite3.connect(db_path)
    for table, column in [("messages", "message"), ("agents", "config"), ("agents", "status"),
                          ("agents", "usage")]:
        for (value,) in conn.execute(f"SELECT {column} FROM {table}"):
            assert isinstance(json.loads(value), dict)
    conn.close()


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc/self/io")
async def test_bytes_written_per_turn_do_not_grow_with_the_conversation(db_path):
    """200 turns, each with a tool call: the kernel's count of bytes this process
    wrote (WAL appends and checkpoints included) per turn stays flat."""

    @tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    rt = Runtime.empty(store=SqliteStore(db_path), tools=[lookup], runtime_id="nb")
    agent = rt.spawn("writer", "test")
    written: list[int] = []
    for turn in range(200):
        before = _bytes_written()
        await agent.send(f"turn {turn}: please look something up")
        written.append(_bytes_written() - before)
    await rt.aclose()
    assert len(agent.history) == 800
    first, last = statistics.median(written[:50]), statistics.median(written[-50:])
    print(f"median bytes written per turn: first 50 = {first:.0f}, last 50 = {last:.0f}, "
          f"ratio = {last / first:.2f}")
    assert last / first < 1.5


def _bytes_written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")
