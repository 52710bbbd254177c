"""`SqliteStore`: the embedded store, one SQLite file next to the notebook.

Design choices, and why:
- The transcript is append-only: committing a message inserts that message's
  row, so bytes written per turn are O(turn), never O(conversation).
- WAL with `synchronous=NORMAL`: a commit is an append to the WAL with no
  fsync, durable across a process crash (what a kernel restart is). On a
  network filesystem WAL's shared memory does not work, so we fall back to a
  rollback journal and warn.
- The file is checked read-only before anything is written: a foreign SQLite
  database, a non-SQLite file or a newer schema raises `StoreError` and stays
  byte-for-byte untouched.
- Only JSON is stored (pydantic `model_dump_json`), never pickle, so opening a
  shared file cannot execute code.
- One connection guarded by a lock, usable from any thread (the runtime's loop
  thread, a finaliser releasing leases at exit).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import ValidationError

from mentra_nb.errors import StoreError
from mentra_nb.messages import Message
from mentra_nb.store import _sql
from mentra_nb.store._decoding import decode_message_arrays, decode_messages
from mentra_nb.store._lease_rules import process_is_alive
from mentra_nb.store._rows import AGENT_COLUMNS, agent_record
from mentra_nb.store._sql_store import Head, SqlStore
from mentra_nb.store.base import (
    PendingTurn,
    PersistedAgent,
    RecordSignal,
    RunRecord,
)

__all__ = [
    "APPLICATION_ID", "SCHEMA_VERSION", "SqliteStore", "is_network_filesystem", "process_is_alive",
    "stored_agent_names",
]

log = logging.getLogger("mentra_nb.store")

APPLICATION_ID = 0x4D4E4231  # "MNB1" in the SQLite header marks a mentra-nb file
"""The SQLite header's application id that marks a mentra-nb state file ("MNB1")."""
SCHEMA_VERSION = 9
"""The SQLite schema version this mentra-nb writes (`PRAGMA user_version`); a newer file is
refused.
"""
PAGE_SIZE = 2048  # bytes, for new files
_SQLITE_MAGIC = b"SQLite format 3\x00"
_NETWORK_FILESYSTEMS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "afs", "9p", "ncpfs", "fuse.sshfs", "fuse.s3fs",
    "fuse.gcsfuse", "fuse.rclone", "glusterfs", "ceph", "lustre", "gpfs", "beegfs",
}

# Each entry migrates the schema from version i to i+1 (index 0 creates it).
_MIGRATIONS: list[str] = [
    """
    CREATE TABLE agents (
        id TEXT PRIMARY KEY,
        runtime_id TEXT NOT NULL,
        name TEXT NOT NULL,
        model TEXT NOT NULL,
        config TEXT NOT NULL,
        status TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'agent',
        parent_id TEXT,
        role TEXT,
        run_generation INTEGER NOT NULL DEFAULT 0,
        usage TEXT NOT NULL,
        message_count INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX agents_by_runtime ON agents (runtime_id, created_at);
    CREATE TABLE messages (
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        message TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (agent_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE runs (
        agent_id TEXT PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
        generation INTEGER NOT NULL,
        baseline INTEGER NOT NULL,
        assistant_committed INTEGER NOT NULL DEFAULT 0,
        started_at REAL NOT NULL
    );
    CREATE TABLE pending_turns (
        agent_id TEXT PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
        turn TEXT NOT NULL
    );
    CREATE TABLE resumable_turns (
        agent_id TEXT PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
        message TEXT NOT NULL
    );
    CREATE TABLE state (
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (agent_id, key)
    ) WITHOUT ROWID;
    """ + _sql.leases_table(_sql.SQLITE),
    # 2: teams. Mail is a queue (pending → inflight → acked); `transcript_seq` is
    # where the claiming run writes it, so after a crash we can tell whether the
    # transcript kept it (ack) or lost it with a rolled-back run (requeue).
    _sql.team_tables(_sql.SQLITE, request_order="rowid"),
    # 3: a lead agent's name is unique in its runtime: two processes spawning one
    # name at once made two agents. Files that already hold such twins keep the
    # oldest under the name; the others get their id's first 8 characters appended.
    # Teammates are found by lead, not by scanning every agent.
    """
    UPDATE agents SET name = name || '-' || substr(id, 1, 8)
        WHERE kind = 'agent' AND rowid NOT IN (
            SELECT min(rowid) FROM agents WHERE kind = 'agent' GROUP BY runtime_id, name);
    CREATE UNIQUE INDEX agents_unique_lead_name ON agents (runtime_id, name) WHERE kind = 'agent';
    CREATE INDEX agents_by_parent ON agents (parent_id, created_at);
    """,
    # 4: settings of a whole runtime (not of one agent), e.g. its MCP servers. No
    # lease fences them: they belong to the notebook, whichever kernel writes.
    """
    CREATE TABLE runtime_state (
        runtime_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (runtime_id, key)
    ) WITHOUT ROWID;
    """,
    # 5: the current run and its pending turn live in the agent's own row. As
    # tables of their own (each with a primary-key index) they cost four extra
    # pages per turn: inserting and deleting a run wrote its table and its index,
    # and so did every pending-turn checkpoint. An UPDATE of columns no index
    # covers writes only the agent's page, which the turn writes anyway.
    """
    ALTER TABLE agents ADD COLUMN run_baseline INTEGER;
    ALTER TABLE agents ADD COLUMN run_assistant_committed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN run_started_at REAL;
    ALTER TABLE agents ADD COLUMN pending_turn TEXT;
    UPDATE agents SET
        run_baseline = (SELECT baseline FROM runs WHERE runs.agent_id = agents.id),
        run_assistant_committed = coalesce(
            (SELECT assistant_committed FROM runs WHERE runs.agent_id = agents.id), 0),
        run_started_at = (SELECT started_at FROM runs WHERE runs.agent_id = agents.id),
        run_generation = coalesce(
            (SELECT generation FROM runs WHERE runs.agent_id = agents.id), run_generation),
        pending_turn = (SELECT turn FROM pending_turns WHERE pending_turns.agent_id = agents.id);
    DROP TABLE runs;
    DROP TABLE pending_turns;
    """,
    # 6: time travel. Messages belong to a branch, not to an agent: an agent reads
    # its head branch, which is its parent branch's first `fork_index` messages
    # (recursively) followed by its own rows. A fork or a rewind inserts a branch
    # row instead of copying a transcript. Every agent's existing messages become
    # its first branch, whose id is the agent's. The messages table is rebuilt
    # (once) to hang its rows on branches and record each message's run.
    # A fork writes a handful of pages, so each index it touches counts: an agent's
    # branches are found from its first branch (whose id is the agent's) down the
    # parent index, not by an index of their own, and only agents with a parent
    # (teammates, subagents) are in the parent index.
    """
    CREATE TABLE branches (
        id TEXT PRIMARY KEY,
        agent_id TEXT,
        parent_id TEXT REFERENCES branches (id),
        fork_index INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX branches_by_parent ON branches (parent_id, fork_index);
    DROP INDEX agents_by_parent;
    CREATE INDEX agents_by_parent ON agents (parent_id, created_at) WHERE parent_id IS NOT NULL;
    INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at)
        SELECT id, id, NULL, 0, created_at FROM agents;
    ALTER TABLE agents ADD COLUMN branch_id TEXT;
    ALTER TABLE agents ADD COLUMN forked_from TEXT;
    ALTER TABLE agents ADD COLUMN fork_index INTEGER;
    UPDATE agents SET branch_id = id;
    CREATE TABLE branch_messages (
        branch_id TEXT NOT NULL REFERENCES branches (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        message TEXT NOT NULL,
        run_generation INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        PRIMARY KEY (branch_id, seq)
    ) WITHOUT ROWID;
    INSERT INTO branch_messages (branch_id, seq, message, run_generation, created_at)
        SELECT agent_id, seq, message, 0, created_at FROM messages WHERE agent_id IN (SELECT id FROM agents);
    DROP TABLE messages;
    ALTER TABLE branch_messages RENAME TO messages;
    """,
    # 7: messages move to a rowid table whose key packs the branch and the position
    # (`_key`). Keyed by (branch_id, seq) WITHOUT ROWID, the table was an index
    # b-tree, which keeps at most ~490 bytes of a row on a 2 KiB page: a quarter of
    # typical messages spilled the rest into an overflow page of their own, so the
    # file was 2.5x its contents and reading a transcript walked twice the pages. A
    # rowid table keeps rows up to ~2 KB on the leaf (longer ones fill whole
    # overflow pages) and needs no index. Branch numbers grow down the branch tree
    # (a parent's is below its children's), so key order is transcript order along
    # any chain of branches.
    """
    ALTER TABLE branches ADD COLUMN number INTEGER;
    CREATE TEMP TABLE branch_numbers AS
        WITH RECURSIVE tree(id, depth, created_at) AS (
            SELECT id, 0, created_at FROM branches WHERE parent_id IS NULL
            UNION ALL SELECT b.id, tree.depth + 1, b.created_at FROM branches b
                JOIN tree ON b.parent_id = tree.id)
        SELECT id, row_number() OVER (ORDER BY depth, created_at, id) AS number FROM tree;
    UPDATE branches SET number = (SELECT n.number FROM temp.branch_numbers n WHERE n.id = branches.id);
    DROP TABLE temp.branch_numbers;
    CREATE UNIQUE INDEX branches_by_number ON branches (number);
    CREATE TABLE keyed_messages (
        key INTEGER PRIMARY KEY,
        message TEXT NOT NULL,
        run_generation INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL
    );
    INSERT INTO keyed_messages (key, message, run_generation, created_at)
        SELECT (b.number << 32) + m.seq, m.message, m.run_generation, m.created_at
        FROM messages m JOIN branches b ON b.id = m.branch_id ORDER BY b.number, m.seq;
    DROP TABLE messages;
    ALTER TABLE keyed_messages RENAME TO messages;
    """,
    # 8: records (see there). 9: features' tables and keys become records.
    _sql.records_table(_sql.SQLITE),
    _sql.feature_rows_to_records(_sql.SQLITE),
]


# A message's key is its branch's number in the high 32 bits and its position in
# the low ones: a branch's rows are one key range, in order (migration 7).
_SEQ_LIMIT = 1 << 32
_SEQ_MASK = _SEQ_LIMIT - 1
_ROWS_OF_B = "m.key >= (b.number << 32) AND m.key < ((b.number + 1) << 32)"  # the rows of branch `b`


def is_network_filesystem(path: str | os.PathLike[str], mounts: str | None = None) -> bool:
    """Whether `path` lives on a network filesystem, judged from `/proc/mounts`
    (or the given text in that format). False when it cannot be told."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text()
        except OSError:
            return False
    target = os.path.realpath(path)
    best, best_type = "", ""
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mount_point = parts[1].replace("\\040", " ")
        prefix = mount_point.rstrip("/") + "/"
        if (target == mount_point or target.startswith(prefix) or mount_point == "/") and len(
            mount_point
        ) >= len(best):
            best, best_type = mount_point, parts[2]
    return best_type in _NETWORK_FILESYSTEMS


class SqliteStore(SqlStore):
    """The SQLite store. `path=":memory:"` keeps everything in this process.

    `journal_mode="auto"` uses WAL unless the file is on a network filesystem
    or WAL cannot be enabled, then a rollback journal (with a warning).
    """

    dialect = _sql.SQLITE

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 10.0,
        journal_mode: Literal["auto", "wal", "delete"] = "auto",
    ) -> None:
        self.path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        self._where = self.path
        self._lock = threading.RLock()
        self._closed = False
        side_files: list[Path] = []
        if self.path != ":memory:":
            _check_existing_file(self.path)
            # -wal/-shm files SQLite creates while opening a file we then refuse
            # (read-only, full disk) are removed again; ones that existed stay.
            side_files = [f for f in (Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
                          if not f.exists()]
        try:
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
            )
        except sqlite3.Error as err:
            raise StoreError(f"cannot open the state file {self.path}: {err}") from err
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            # A new file gets 2 KiB pages (SQLite's default is 4 KiB): every commit
            # writes whole pages to the WAL, and a turn's commits each touch a page
            # of the transcript and one of the agent, so halving the page halved the
            # bytes written per turn, while reading a transcript back stayed within
            # a few percent. An existing file keeps its page size (this is a no-op).
            self._conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            # Migrate before switching to WAL: a migration that fails rolls back and
            # leaves a file we refuse exactly as it was.
            self._migrate()
            self.journal_mode = self._set_journal_mode(journal_mode)
            self._conn.execute("PRAGMA synchronous = NORMAL")
        except (sqlite3.Error, UnicodeDecodeError) as err:
            # A read-only folder or file, a full disk: SQLite can read the header
            # but not write its journal. Say which file and what to check.
            self._conn.close()
            for created in side_files:
                with suppress(OSError):
                    if created.stat().st_size == 0:
                        created.unlink()
            raise StoreError(
                f"cannot use the state file {self.path}: {err}. Check that the file and its "
                "folder are writable and the disk has room, or open a store at another path"
            ) from err

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    # --- opening --------------------------------------------------------------

    def _set_journal_mode(self, wanted: str) -> str:
        if self.path == ":memory:":
            return "memory"
        if wanted == "auto" and is_network_filesystem(Path(self.path).parent):
            warnings.warn(
                f"{self.path} is on a network filesystem, where SQLite's WAL mode is unsafe; "
                "using a rollback journal instead (slower, still safe)",
                RuntimeWarning,
                stacklevel=3,
            )
            wanted = "delete"
        if wanted != "delete":
            try:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except sqlite3.Error as err:
                mode = f"error: {err}"
            if mode == "wal":
                return "wal"
            warnings.warn(
                f"could not enable WAL for {self.path} ({mode}); using a rollback journal instead",
                RuntimeWarning,
                stacklevel=3,
            )
        self._conn.execute("PRAGMA journal_mode = DELETE")
        return "delete"

    def _migrate(self) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                version = self._conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:  # a newer mentra-nb wrote it since we checked
                    raise StoreError(_newer_schema_message(self.path, version))
                for index in range(version, SCHEMA_VERSION):
                    for statement in _sql.statements(_MIGRATIONS[index]):
                        self._conn.execute(statement)
                if version < SCHEMA_VERSION:
                    # Only when something changed: stamping an up-to-date file would
                    # rewrite its header on every open, a damaged one's included.
                    self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self._conn.execute("COMMIT")
            except BaseException:
                # A full disk makes SQLite roll back by itself; a second ROLLBACK would
                # replace the real error with "no transaction is active".
                with suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                raise

    # --- plumbing -------------------------------------------------------------

    @contextmanager
    def _transaction(self, pipelined: bool = False) -> Iterator[sqlite3.Cursor]:
        # `pipelined` changes nothing here: every statement is a call into this process.
        with self._lock:
            self._ensure_open()
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as err:
                raise StoreError(f"cannot write to {self.path}: {err}") from err
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException as err:
                with suppress(sqlite3.Error):
                    cur.execute("ROLLBACK")
                if isinstance(err, sqlite3.Error):
                    raise StoreError(f"writing to {self.path} failed: {err}") from err
                raise

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._reading() as conn:
            return conn.execute(sql, params).fetchall()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._ensure_open()
            try:
                yield self._conn
            except (sqlite3.Error, UnicodeDecodeError) as err:
                raise StoreError(f"reading {self.path} failed ({err}); the file may be damaged") from err

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store {self.path} is closed; open a new SqliteStore")

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def _now(self, cur: sqlite3.Cursor) -> float:
        return time.time()

    def _is_unique_violation(self, err: BaseException | None) -> bool:
        return isinstance(err, sqlite3.IntegrityError)

    # --- the transcript's layout: rows keyed by branch number and position ---------------

    def _head(self, cur: sqlite3.Cursor, agent_id: str) -> Head:
        row = cur.execute(
            "SELECT a.branch_id, b.number, a.message_count, a.run_generation, a.run_baseline"
            " FROM agents a JOIN branches b ON b.id = a.branch_id WHERE a.id = ?",
            (agent_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"no agent {agent_id} in the store")
        return Head(row[0], int(row[1]), int(row[2]), int(row[3]), row[4])

    def _append(self, cur: sqlite3.Cursor, head: Head, start: int, generation: int,
                messages: list[Message]) -> None:
        if start + len(messages) > _SEQ_LIMIT:
            raise StoreError(f"a branch holds at most {_SEQ_LIMIT:,} messages; fork the agent to go on")
        now = time.time()
        cur.executemany(
            "INSERT INTO messages (key, message, run_generation, created_at) VALUES (?, ?, ?, ?)",
            [(_key(head.rows, start + i), m.model_dump_json(), generation, now)
             for i, m in enumerate(messages)],
        )

    def _delete_rows(self, cur: sqlite3.Cursor, head: Head, start: int) -> None:
        _delete_rows(cur, head.rows, start)

    def _insert_branch(self, cur: sqlite3.Cursor, branch: str, agent_id: str, parent: str | None,
                       at: int, now: float) -> None:
        # Numbered after every branch there is, its parent's included (see migration 7).
        cur.execute(
            "INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at, number)"
            " VALUES (?, ?, ?, ?, ?, (SELECT coalesce(max(number), 0) + 1 FROM branches))",
            (branch, agent_id, parent, at, now),
        )

    def _is_bare_pointer(self, cur: sqlite3.Cursor, branch: str) -> bool:
        return (
            cur.execute(f"SELECT 1 FROM branches b JOIN messages m ON {_ROWS_OF_B} WHERE b.id = ? LIMIT 1",
                        (branch,)).fetchone() is None
            and cur.execute("SELECT 1 FROM branches WHERE parent_id = ? LIMIT 1", (branch,)).fetchone()
            is None
            and cur.execute("SELECT parent_id FROM branches WHERE id = ?", (branch,)).fetchone()[0]
            is not None
        )

    def _branch_length(self, cur: sqlite3.Cursor, branch: str) -> int:
        row = cur.execute(
            f"SELECT b.fork_index, (SELECT max(m.key) & {_SEQ_MASK} FROM messages m WHERE {_ROWS_OF_B})"
            " FROM branches b WHERE b.id = ?",
            (branch,),
        ).fetchone()
        return int(row[0]) if row[1] is None else max(int(row[0]), int(row[1]) + 1)

    def _collect_branches(self, cur: sqlite3.Cursor) -> None:
        while True:
            orphans = cur.execute(
                "SELECT id, number FROM branches b WHERE agent_id IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM branches c WHERE c.parent_id = b.id)"
            ).fetchall()
            if not orphans:
                break
            for _branch, number in orphans:
                _delete_rows(cur, number, 0)
            cur.executemany("DELETE FROM branches WHERE id = ?", [(branch,) for branch, _number in orphans])
        for (number, needed) in cur.execute(
            "SELECT b.number, (SELECT max(fork_index) FROM branches c WHERE c.parent_id = b.id)"
            " FROM branches b WHERE agent_id IS NULL"
        ).fetchall():
            _delete_rows(cur, number, needed)

    # --- reading agents and transcripts ----------------------------------------------------

    @contextmanager
    def _decoding(self, what: str) -> Iterator[None]:
        """Turn a row that no longer parses into a StoreError that names the file."""
        try:
            yield
        except (ValidationError, ValueError) as err:  # json.JSONDecodeError is a ValueError
            raise StoreError(
                f"{self.path} holds a damaged {what} ({type(err).__name__}); restore the file "
                "from a copy, or move it aside to start afresh"
            ) from err

    def load_agent(self, agent_id: str, *, transcript: bool = True) -> PersistedAgent | None:
        with self._lock, self._decoding(f"record of agent {agent_id}"):
            rows = self._read(
                f"SELECT {AGENT_COLUMNS}, run_baseline, run_assistant_committed, run_started_at,"
                " pending_turn, r.message FROM agents LEFT JOIN resumable_turns r ON r.agent_id = id"
                " WHERE id = ?", (agent_id,))
            if not rows:
                return None
            record = agent_record(rows[0], json.loads)
            *run_row, resumable = rows[0][-5:]
            messages = self.load_messages(agent_id) if transcript else []
            return PersistedAgent(
                record=record,
                transcript=messages,
                run=RunRecord(
                    generation=record.run_generation, baseline=run_row[0],
                    assistant_committed=bool(run_row[1]), started_at=run_row[2],
                ) if run_row[0] is not None else None,
                pending_turn=PendingTurn.model_validate_json(run_row[3]) if run_row[3] else None,
                resumable_turn=Message.model_validate_json(resumable) if resumable else None,
            )

    def load_messages(self, agent_id: str, start: int = 0, end: int | None = None, *,
                      branch_id: str | None = None) -> list[Message]:
        with self._lock:
            query = self._transcript_query(agent_id, branch_id, start, end)
            if query is None:
                return []
            with_chain, rows_clause, params = query
            joined = self._joined_messages(with_chain, rows_clause, params)
            if joined is None:  # too long to join: row by row, as bytes the decoder joins
                rows = self._read(f"{with_chain} SELECT CAST(m.message AS BLOB) {rows_clause}", params)
        with self._decoding(f"message of agent {agent_id}"):
            if joined is None:
                return decode_messages(rows)
            return decode_message_arrays([joined])

    def _joined_messages(self, with_chain: str, rows_clause: str,
                         params: tuple[Any, ...]) -> tuple[int, bytes] | None:
        """The count of the selected messages and their JSON array, joined by SQLite;
        None if the array is longer than SQLite's longest string (a transcript of big
        images, say)."""
        # One step in C with the GIL released, a third faster than handing Python each
        # row. The aggregate is fed in the subquery's order: SQLite keeps a subquery's
        # ORDER BY under an aggregate other than count/min/max for this very use
        # (select.c, "OmitOrderBy" condition 4, and flattening rule 16).
        try:
            count, array = self._conn.execute(
                f"{with_chain} SELECT count(*),"
                " CAST('[' || coalesce(group_concat(message, ','), '') || ']' AS BLOB)"
                f" FROM (SELECT m.message {rows_clause})", params).fetchone()
        except sqlite3.DataError:  # SQLITE_TOOBIG
            return None
        except sqlite3.Error as err:
            raise StoreError(f"reading {self.path} failed ({err}); the file may be damaged") from err
        return count, array

    def _transcript_rows(self, columns: str, agent_id: str, branch_id: str | None, start: int,
                         end: int | None) -> list[tuple[Any, ...]]:
        """`columns` of the transcript's rows (`m` is the messages table) from `start`
        to `end`, in order (see `_transcript_query`)."""
        with self._lock:
            query = self._transcript_query(agent_id, branch_id, start, end)
            if query is None:
                return []
            with_chain, rows_clause, params = query
            return self._read(f"{with_chain} SELECT {columns} {rows_clause}", params)

    def _transcript_query(self, agent_id: str, branch_id: str | None, start: int,
                          end: int | None) -> tuple[str, str, tuple[Any, ...]] | None:
        """How to select the transcript's rows from `start` to `end`, in order: of the
        agent's head branch, or of `branch_id` once checked to be the agent's, as a WITH
        clause (or ""), the FROM ... ORDER BY clause that follows the selected columns
        (`m` is the messages table), and their parameters. None for an unknown agent."""
        if branch_id is None:
            head = self._read(
                "SELECT a.branch_id, b.number, b.parent_id FROM agents a JOIN branches b"
                " ON b.id = a.branch_id WHERE a.id = ?", (agent_id,))
            if not head:
                return None
            branch_id, number, parent = head[0]
            if parent is None:
                # No fork or rewind behind the head (the usual case): one key range, read
                # in key order, where the chain query has SQLite sort its rows (a sixth
                # of the read).
                return ("", "FROM messages m WHERE m.key >= ? AND m.key < ? ORDER BY m.key",
                        (_key(number, _start(start)), _key(number, _end(end))))
        else:
            owner = self._read("SELECT agent_id FROM branches WHERE id = ?", (branch_id,))
            if not owner or owner[0][0] != agent_id:
                raise StoreError(
                    f"agent {agent_id} has no branch {branch_id}; agent.branches() lists its branches"
                )
        return _CHAIN, _CHAIN_ROWS, (branch_id, _end(end), _start(start))


    _BRANCH_LAST_SEQ = f"(SELECT max(m.key) & {_SEQ_MASK} FROM messages m WHERE {_ROWS_OF_B})"

    def _checkpoint_rows(self, agent_id: str, branch_id: str | None, start: int,
                         end: int | None) -> list[tuple[Any, ...]]:
        return self._transcript_rows(
            f"m.key & {_SEQ_MASK}, CAST(m.message AS BLOB), m.run_generation, m.created_at",
            agent_id, branch_id, start, end)

    def vacuum(self) -> None:
        with self._lock:
            self._ensure_open()
            try:
                self._conn.execute("VACUUM")
                if self.journal_mode == "wal":
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as err:
                raise StoreError(f"vacuuming {self.path} failed: {err}") from err

    def record_signal(self) -> RecordSignal:
        if self.path == ":memory:":
            return NoSignal()
        self._ensure_open()
        return DataVersionSignal(self.path)



# --- queued records from other processes ----------------------------------------------------


class DataVersionSignal:
    """Records queued by another connection, seen by polling `PRAGMA data_version`
    (which changes when any other connection commits; reading it costs no I/O
    beyond the WAL index), then the pending records' count and newest seq and
    time, so commits that queue nothing (streaming checkpoints) wake nobody."""

    POLL_SECONDS = 0.05

    def __init__(self, path: str) -> None:
        # Quoted: a folder named "a#b" or "q?" must not end the file name of the URI.
        uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._version = self._data_version()
        self._mark = self._queue_mark()

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _queue_mark(self) -> tuple[Any, ...]:
        return tuple(self._conn.execute(_sql.QUEUE_MARK).fetchone())

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            try:
                version = self._data_version()
                if version != self._version:
                    self._version = version
                    mark = self._queue_mark()
                    if mark != self._mark:
                        self._mark = mark
                        return True
            except sqlite3.Error as err:  # locked for a moment, or the file went away
                log.debug("polling for queued records failed: %s", err)
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self.POLL_SECONDS, left))

    def close(self) -> None:
        self._conn.close()


class NoSignal:
    """An in-memory store has no other process to hear from."""

    def wait(self, timeout: float) -> bool:
        time.sleep(timeout)
        return False

    def close(self) -> None:
        pass


# --- file checks ----------------------------------------------------------------


def _check_existing_file(path: str) -> None:
    """Refuse, without writing a byte, a file that is not a mentra-nb store we can open."""
    p = Path(path)
    if not p.exists():
        parent = p.parent
        if not parent.is_dir():
            raise StoreError(f"cannot create {path}: the folder {parent} does not exist")
        return
    if p.is_dir():
        raise StoreError(f"{path} is a folder; give the path of a .mentra.sqlite file")
    try:
        with p.open("rb") as f:
            header = f.read(100)
    except OSError as err:
        raise StoreError(f"cannot read {path}: {err}") from err
    if not os.access(p, os.W_OK):
        raise StoreError(
            f"{path} is read-only, so mentra-nb cannot record agents in it; it was left untouched. "
            "Make it writable (chmod u+w) or point mentra-nb at another path (%mentra db PATH)."
        )
    if not header:
        return  # an empty file is a new store
    if not header.startswith(_SQLITE_MAGIC) or len(header) < 100:
        raise StoreError(
            f"{path} is not a SQLite file, so it is not a mentra-nb store; it was left untouched. "
            "Open a store at another path."
        )
    # Who wrote the file is in its header (application_id, user_version), but in WAL
    # mode the newest header may still sit in the -wal file: ask SQLite through a
    # read-only connection, which changes nothing.
    # The read-only look also parses the schema, so a damaged file is refused here,
    # before opening it for writing could change a byte of it.
    application_id, user_version, tables = _read_only_identity(path)
    if application_id in (0, APPLICATION_ID) and user_version == 0 and tables == 0:
        return  # a blank SQLite database: ours to initialise
    if application_id != APPLICATION_ID or user_version == 0:
        # We stamp the id and a version in the transaction that creates our tables,
        # so tables without a version are someone else's.
        raise StoreError(
            f"{path} is a SQLite database of another application (application_id "
            f"{application_id:#x}), not a mentra-nb store; it was left untouched. "
            "Use another path for mentra-nb's state."
        )
    if user_version > SCHEMA_VERSION:
        raise StoreError(_newer_schema_message(path, user_version))


def stored_agent_names(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """The lead agents' names in a state file, by runtime id, read without writing
    anything (not even -wal/-shm files); {} for a file that is no mentra-nb store
    or cannot be read. For looking at state files nearby, not opening them."""
    path = os.path.abspath(path)
    wal = Path(f"{path}-wal")
    immutable = "" if wal.exists() and wal.stat().st_size > 0 else "&immutable=1"
    try:
        conn = sqlite3.connect(f"file:{quote(path)}?mode=ro{immutable}", uri=True)
        try:
            if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                return {}
            rows = conn.execute("SELECT runtime_id, name FROM agents WHERE kind = 'agent' "
                                "ORDER BY created_at, rowid").fetchall()
        finally:
            conn.close()
    except (sqlite3.Error, OSError):
        return {}
    names: dict[str, list[str]] = {}
    for runtime_id, name in rows:
        names.setdefault(runtime_id, []).append(name)
    return names


def _read_only_identity(path: str) -> tuple[int, int, int]:
    """(application_id, user_version, table count) read without writing."""
    wal = Path(f"{path}-wal")
    # Without a WAL to read, `immutable` keeps SQLite from creating -shm/-wal files
    # beside a file we may be about to refuse; with one, its pages must be read.
    immutable = "" if wal.exists() and wal.stat().st_size > 0 else "&immutable=1"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro{immutable}", uri=True)
        try:
            schema = conn.execute("SELECT name, sql FROM sqlite_master").fetchall()
            return (
                conn.execute("PRAGMA application_id").fetchone()[0],
                conn.execute("PRAGMA user_version").fetchone()[0],
                len(schema),
            )
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError) as err:
        raise StoreError(
            f"{path} cannot be read as SQLite ({err}): it is damaged or not a database; it was "
            "left untouched. Restore it from a copy or point mentra-nb at another path."
        ) from err


def _newer_schema_message(path: str, version: int) -> str:
    return (
        f"{path} was written by a newer mentra-nb (schema {version}, this one reads up to "
        f"{SCHEMA_VERSION}); it was left untouched. Upgrade mentra-nb: pip install -U mentra-nb"
    )


# --- row helpers ----------------------------------------------------------------



# The chain of branches a transcript is read from, head first, each with the
# position below which its rows count (`below`): a branch's own rows start at its
# fork index, and its parent's count only below it. One recursive query, whose
# depth is the number of forks and rewinds behind the head, never the length.
_CHAIN = (  # parameters: the head branch, the end
    "WITH RECURSIVE chain(branch, below) AS (SELECT ?, ?"
    " UNION ALL SELECT b.parent_id, min(b.fork_index, chain.below) FROM branches b"
    " JOIN chain ON b.id = chain.branch WHERE b.parent_id IS NOT NULL)"
)
# The rows of the chain's branches from a position (a parameter) up to each one's
# `below`, in transcript order: key order, as parents are numbered below children.
_CHAIN_ROWS = (
    "FROM chain JOIN branches cb ON cb.id = chain.branch JOIN messages m"
    " ON m.key >= (cb.number << 32) + ? AND m.key < (cb.number << 32) + chain.below ORDER BY m.key"
)


def _key(number: int, seq: int) -> int:
    return (number << 32) + seq


def _end(end: int | None) -> int:
    return _SEQ_LIMIT if end is None else max(0, min(end, _SEQ_LIMIT))


def _start(start: int) -> int:
    return max(0, min(start, _SEQ_LIMIT))


def _delete_rows(cur: sqlite3.Cursor, number: int, start: int) -> None:
    """Delete the rows of branch `number` from position `start` on."""
    cur.execute("DELETE FROM messages WHERE key >= ? AND key < ?", (_key(number, start), _key(number + 1, 0)))
