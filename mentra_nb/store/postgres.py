"""`PostgresStore`: agents shared by kernels on several hosts, in Postgres.

    store = PostgresStore("postgresql://alice@db.example.org/mentra")

Design choices, and why:
- The same rows as `SqliteStore` (append-only transcript: a committed message
  is one INSERT), with JSON in `json` columns, so `SELECT message->>'role'` works
  in psql and nothing is ever pickled. Not `jsonb`: it reorders object keys, and
  a tool call's arguments must read back byte for byte as the model wrote them
  (a prompt cache keys on the exact bytes).
- psycopg 3 with its connection pool: the runtime's loop thread and the lease
  heartbeat each borrow a connection for one transaction, so the store works
  through a transaction pooler (PgBouncer in transaction mode, the usual one in
  front of a managed Postgres). Server-side prepared statements (psycopg's, after
  5 runs of a query: half the time of a checkpoint write) only where the server
  session is the connection's own: a pooler hands each transaction to any
  session, where a statement prepared on another is missing or already exists.
  Which it is, is found out when the store opens (`_sessions_are_shared`).
- Mail wakes through `LISTEN` on a connection of its own, which needs a server
  session: `listen_url=` (or `?listen_url=` in the URL) points it past a
  pooler. Listening through a transaction pooler would hear nothing; that is
  detected, said once, and mail is then polled for instead.
- NOTIFY goes to a channel named by a random token kept in the schema's
  `mentra_schema` row, so only roles that can read the schema can reach its
  listeners (NOTIFY on any channel is open to every role of a database).
- Leases are judged on the database's clock (`clock_timestamp()`), so hosts
  whose clocks disagree still agree on who expired. Every fenced write first
  reads the agent's lease row `FOR SHARE`: a takeover (an UPDATE of that row)
  waits for a write in flight to commit, and every write after it sees the new
  token and is refused (`LeaseLost`). Nothing interleaves.
- Tables live in the first schema of the role's `search_path` (Postgres's
  default is `"$user", public`: a role's own schema when there is one), or in
  `schema=`. A version table records the schema version; a newer one is
  refused with a clear error, and a schema holding someone else's `agents`
  table is refused untouched.
- The password is never stored or echoed: it comes from the DSN, `PGPASSWORD`
  or `PGPASSFILE` (libpq's usual places), and `repr` and errors show the DSN
  without it; libpq's own messages are scrubbed of it (see `_dsn.py`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from mentra_nb.errors import ConfigError, DatabaseError, StoreError
from mentra_nb.messages import Message
from mentra_nb.store import _sql
from mentra_nb.store._decoding import decode_messages
from mentra_nb.store._dsn import parse_dsn, redact_dsn, scrub
from mentra_nb.store._rows import AGENT_COLUMNS, agent_record
from mentra_nb.store._sql_store import Head, SqlStore
from mentra_nb.store.base import (
    PendingTurn,
    PersistedAgent,
    RecordSignal,
    RunRecord,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["POSTGRES_SCHEMA_VERSION", "PostgresStore", "redact_dsn"]

log = logging.getLogger("mentra_nb.store")

POSTGRES_SCHEMA_VERSION = 5
"""The Postgres schema version this mentra-nb writes (`mentra_schema`); a newer one is refused."""
# The channel `NOTIFY` wakes listeners on when mail is posted (see `ListenSignal`):
# this prefix and the schema's random token (schema 3).
_MAIL_CHANNEL = re.compile(r"mentra_mail_[0-9a-f]{32}")

# Each entry migrates the schema from version i to i+1 (index 0 creates it).
_MIGRATIONS: list[str] = [
    """
    CREATE TABLE agents (
        id TEXT PRIMARY KEY,
        ord BIGSERIAL NOT NULL,
        runtime_id TEXT NOT NULL,
        name TEXT NOT NULL,
        model TEXT NOT NULL,
        config JSON NOT NULL,
        status JSON NOT NULL,
        kind TEXT NOT NULL DEFAULT 'agent',
        parent_id TEXT,
        role TEXT,
        run_generation INTEGER NOT NULL DEFAULT 0,
        usage JSON NOT NULL,
        message_count INTEGER NOT NULL DEFAULT 0,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        -- The current run and its half-streamed turn live in the agent's row (as in
        -- SQLite's schema 5): a checkpoint is one UPDATE of a row the turn writes anyway.
        run_baseline INTEGER,
        run_assistant_committed BOOLEAN NOT NULL DEFAULT FALSE,
        run_started_at DOUBLE PRECISION,
        pending_turn JSON
    );
    CREATE INDEX agents_by_runtime ON agents (runtime_id, created_at, ord);
    CREATE INDEX agents_by_parent ON agents (parent_id, created_at);
    CREATE UNIQUE INDEX agents_unique_lead_name ON agents (runtime_id, name) WHERE kind = 'agent';
    CREATE TABLE messages (
        agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        message JSON NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (agent_id, seq)
    );
    CREATE TABLE resumable_turns (
        agent_id TEXT PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
        message JSON NOT NULL
    );
    CREATE TABLE state (
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value JSON NOT NULL,
        PRIMARY KEY (agent_id, key)
    );
    CREATE TABLE runtime_state (
        runtime_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value JSON NOT NULL,
        PRIMARY KEY (runtime_id, key)
    );
    """ + _sql.leases_table(_sql.POSTGRES) + _sql.team_tables(_sql.POSTGRES, request_order="ord"),
    # 2: time travel, as SQLite's schema 6: messages hang on branches; an agent reads
    # its head branch (its parent branch's first `fork_index` messages, recursively,
    # then its own rows), so a fork or a rewind inserts a row instead of a copy.
    """
    CREATE TABLE branches (
        id TEXT PRIMARY KEY,
        agent_id TEXT,
        parent_id TEXT REFERENCES branches (id),
        fork_index INTEGER NOT NULL DEFAULT 0,
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX branches_by_parent ON branches (parent_id, fork_index);
    INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at)
        SELECT id, id, NULL, 0, created_at FROM agents;
    ALTER TABLE agents ADD COLUMN branch_id TEXT, ADD COLUMN forked_from TEXT,
        ADD COLUMN fork_index INTEGER;
    UPDATE agents SET branch_id = id;
    ALTER TABLE messages DROP CONSTRAINT messages_agent_id_fkey;
    ALTER TABLE messages RENAME COLUMN agent_id TO branch_id;
    ALTER TABLE messages ADD COLUMN run_generation INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD CONSTRAINT messages_branch_id_fkey FOREIGN KEY (branch_id)
        REFERENCES branches (id) ON DELETE CASCADE
    """,
    # 3: mail wakes on a channel of this schema's own, named by a token only roles that
    # can read the schema learn (a shared channel let any role of the database flood it).
    """
    ALTER TABLE mentra_schema ADD COLUMN mail_channel TEXT;
    UPDATE mentra_schema SET mail_channel = 'mentra_mail_' || replace(gen_random_uuid()::text, '-', '')
    """,
    # 4: records (see there). 5: features' tables and keys become records.
    _sql.records_table(_sql.POSTGRES),
    _sql.feature_rows_to_records(_sql.POSTGRES),
]

# psycopg's default: a query is prepared on the server after this many runs.
_PREPARE_AFTER = 5

# The database's clock, in unix seconds: every host judges lease expiry by it.
_NOW = "extract(epoch FROM clock_timestamp())::double precision"


class PostgresStore(SqlStore):
    """The Postgres store (needs `pip install mentra-nb[postgres]`).

    `dsn` is a libpq connection string or URL; leave the password out of it and
    let libpq find it in `PGPASSWORD` or `~/.pgpass` (`PGPASSFILE`).
    `schema` puts the tables in that schema (created when missing) instead of
    the first schema of the role's `search_path`. `min_size`/`max_size` size
    the connection pool (a kernel needs few: up to eight for the runtime's store
    threads, one for the loop's reads, one for the heartbeat; mail listens on a
    connection of its own). `prepare_threshold=N`
    prepares a query on the server after N runs (psycopg's setting), None never
    does (what a transaction pooler such as PgBouncer needs); the default "auto"
    is 5 on a session of the connection's own, None through a transaction pooler.
    `listen_url` is where mail is listened for when `dsn` goes through a
    transaction pooler (the server itself, or a session-mode pool). The URL may
    carry both as query parameters (`?prepare_threshold=5&listen_url=...`,
    percent-encoded), which is how `%mentra db` and `MENTRA_DB_URL` pass them.
    """

    dialect = _sql.POSTGRES
    # Calls take network round trips: a runtime makes them off its event loop (`StoreIO`).
    network = True

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        prepare_threshold: int | Literal["auto"] | None = "auto",
        listen_url: str | None = None,
        connect_timeout: float = 10.0,
        application_name: str = "mentra-nb",
    ) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as err:
            raise ConfigError(
                "PostgresStore needs psycopg 3 and its pool: pip install 'mentra-nb[postgres]'"
            ) from err
        if schema is not None and (not schema.replace("_", "").isalnum() or schema[0].isdigit()):
            raise ConfigError(f"schema {schema!r} is not a plain identifier (letters, digits, _)")
        parsed = parse_dsn(dsn)
        listen_url = listen_url or parsed.options.get("listen_url")
        # Every form of the DSNs the password may hide in: scrubbed from each message.
        self._secret_sources = (dsn, parsed.libpq, *([listen_url] if listen_url else []))
        if "prepare_threshold" in parsed.options:
            prepare_threshold = _threshold(parsed.options["prepare_threshold"])
        self.dsn = _readable(parsed.libpq, "the store's DSN", self._secret_sources)
        self.listen_url = (_readable(parse_dsn(listen_url).libpq, "listen_url", self._secret_sources)
                           if listen_url else None)
        self.schema = schema
        self._where = redact_dsn(dsn)
        self._closed = False
        self._lock = threading.Lock()
        self._psycopg = psycopg
        self._mail_channel = ""  # read from the schema once opened
        self._told_mail_is_polled = False
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "prepare_threshold": None,  # decided below, once connected
            "application_name": application_name,
        }
        if schema is not None:
            kwargs["options"] = f"-c search_path={schema}"
        self._connect_kwargs = kwargs
        self.schema_name = ""  # where the tables are, once opened
        try:
            # Once by hand first: the pool would retry in the background and report only
            # a timeout, where libpq says what is wrong (no server, bad role, password).
            timeout = max(1, round(connect_timeout))
            with self.connect(connect_timeout=timeout) as first:
                if prepare_threshold == "auto":
                    with self.connect(connect_timeout=timeout) as second:
                        pooled = _sessions_are_shared(first, second)
                    prepare_threshold = None if pooled else _PREPARE_AFTER
            kwargs["prepare_threshold"] = prepare_threshold
        except psycopg.Error as err:
            reason = self._reason(err)
            advice = ("Check that the server runs and accepts this role (the password comes from "
                      "PGPASSWORD or ~/.pgpass, never from mentra-nb)")
            if schema is not None and "startup parameter" in reason:
                # PgBouncer refuses the `options` that carry schema='s search_path.
                advice = (f"A pooler cannot pass schema=: set the role's own search_path instead "
                          f"(ALTER ROLE <role> SET search_path = {schema}) and leave schema= out")
            raise DatabaseError(f"cannot connect to Postgres at {self._where}: {reason}. {advice}"
                                ) from None
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            self.dsn, min_size=min_size, max_size=max_size, kwargs=kwargs, open=False,
            name="mentra-nb", timeout=connect_timeout,
        )
        self._pool.open()
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    def __repr__(self) -> str:
        schema = f", schema={self.schema!r}" if self.schema else ""
        return f"PostgresStore({self._where!r}{schema})"

    @property
    def where(self) -> str:
        """The DSN without its password (what messages show)."""
        return self._where

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        """A new connection outside the pool, set up like the pool's."""
        return self._psycopg.connect(self.dsn, **{**self._connect_kwargs, **kwargs})

    def _reason(self, err: BaseException) -> str:
        """An error's first line, which for libpq names the cause, without any
        form of the password (libpq quotes the part of a DSN it could not read)."""
        return scrub(_reason(err), *self._secret_sources)

    # --- opening --------------------------------------------------------------

    def _migrate(self) -> None:
        with self._connection() as conn, conn.transaction():
            # One migrator at a time across every host; the others wait, then see it done.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('mentra_nb.migrate'))")
            if self.schema is not None:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            row = conn.execute("SELECT current_schema()").fetchone()
            target = row[0] if row else None
            if target is None:
                raise DatabaseError(
                    f"the role has no schema to create tables in at {self._where} (its search_path "
                    "names none that exists). Create one, e.g. CREATE SCHEMA AUTHORIZATION "
                    "current_user, or pass PostgresStore(dsn, schema=...)"
                )
            tables = {r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (target,))}
            if "mentra_schema" in tables:
                found = conn.execute("SELECT version FROM mentra_schema").fetchone()
                version = int(found[0]) if found else 0
            elif "agents" in tables:
                raise DatabaseError(
                    f"schema {target!r} at {self._where} holds an 'agents' table that is not "
                    "mentra-nb's; it was left untouched. Use another schema: "
                    "PostgresStore(dsn, schema='mentra')"
                )
            else:
                allowed = conn.execute("SELECT has_schema_privilege(%s, 'CREATE')",
                                       (target,)).fetchone()
                if not (allowed and allowed[0]):
                    raise DatabaseError(
                        f"this role may not create tables in schema {target!r} at {self._where}. "
                        "Give it a schema of its own (as the database owner: CREATE SCHEMA "
                        "AUTHORIZATION <role>), or pass PostgresStore(dsn, schema=...) naming one "
                        "it may use"
                    )
                conn.execute("CREATE TABLE mentra_schema (version INTEGER NOT NULL)")
                conn.execute("INSERT INTO mentra_schema VALUES (0)")
                version = 0
            if version > POSTGRES_SCHEMA_VERSION:
                raise DatabaseError(
                    f"schema {target!r} at {self._where} was written by a newer mentra-nb (schema "
                    f"{version}, this one reads up to {POSTGRES_SCHEMA_VERSION}); it was left "
                    "untouched. Upgrade mentra-nb: pip install -U 'mentra-nb[postgres]'"
                )
            for index in range(version, POSTGRES_SCHEMA_VERSION):
                for statement in _sql.statements(_MIGRATIONS[index]):
                    conn.execute(statement)
            if version < POSTGRES_SCHEMA_VERSION:
                conn.execute("UPDATE mentra_schema SET version = %s", (POSTGRES_SCHEMA_VERSION,))
            found = conn.execute("SELECT mail_channel FROM mentra_schema").fetchone()
            if found is None or not _MAIL_CHANNEL.fullmatch(str(found[0])):
                raise DatabaseError(
                    f"schema {target!r} at {self._where} holds no valid mail channel in its "
                    "mentra_schema row; it was changed by hand. Restore it: UPDATE mentra_schema SET "
                    "mail_channel = 'mentra_mail_' || replace(gen_random_uuid()::text, '-', '')")
            self._mail_channel = str(found[0])
            self.schema_name = target

    # --- plumbing -------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if self._closed:
            raise StoreError(f"the store {self._where} is closed; open a new PostgresStore")
        try:
            with self._pool.connection() as conn:
                yield conn
        except self._psycopg.Error as err:
            raise DatabaseError(
                f"the Postgres store at {self._where} failed: {self._reason(err)}") from err
        except self._pool_errors() as err:
            raise DatabaseError(
                f"no connection to Postgres at {self._where}: {self._reason(err)}") from err

    def _pool_errors(self) -> type[Exception]:
        from psycopg_pool import PoolTimeout

        return PoolTimeout

    @contextmanager
    def _transaction(self, pipelined: bool = False) -> Iterator[psycopg.Connection[Any]]:
        with self._connection() as conn:
            if not pipelined:
                with conn.transaction():
                    yield conn
                return
            # Pipeline mode: a statement goes out with the next fetch, so BEGIN
            # travels with the lease check and the writes with the COMMIT. By hand:
            # psycopg's transaction() would wait for the server at its start and end.
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    yield conn
                    conn.execute("COMMIT")
            finally:
                # A failed statement (or the body's error) left the transaction open;
                # a broken connection (status UNKNOWN) is the pool's to discard.
                status = self._psycopg.pq.TransactionStatus
                if conn.info.transaction_status in (status.INTRANS, status.INERROR):
                    conn.rollback()

    def _now(self, cur: psycopg.Connection[Any]) -> float:
        # The database's clock: every host judges lease expiry by it.
        return float(cur.execute(f"SELECT {_NOW}").fetchone()[0])  # type: ignore[index]

    def _is_unique_violation(self, err: BaseException | None) -> bool:
        return isinstance(err, self._psycopg.errors.UniqueViolation)

    def _notify_queued(self, cur: psycopg.Connection[Any]) -> None:
        # Delivered at commit, to every kernel on every host listening on this schema's
        # channel (see ListenSignal); no payload: a listener learns only that one came.
        cur.execute(f"NOTIFY {self._mail_channel}")

    # --- the transcript's layout: rows keyed by (branch_id, seq) -------------------------

    _HEAD = "SELECT branch_id, message_count, run_generation, run_baseline FROM agents WHERE id = %s"

    def _head(self, cur: psycopg.Connection[Any], agent_id: str) -> Head:
        return _head_of(cur.execute(self._HEAD, (agent_id,)).fetchone(), agent_id)

    def _fenced_head(self, cur: psycopg.Connection[Any], agent_id: str, token: str) -> Head:
        # Both asked for before either is read: one round trip in pipeline mode. The
        # lease is judged first, as `_fence` then `_head` would.
        lease = self._run(cur, self._LEASE_ROW + self.dialect.share_lock, (agent_id,))
        head = cur.execute(self._HEAD, (agent_id,))
        self._judge_lease(lease.fetchone(), agent_id, token)
        return _head_of(head.fetchone(), agent_id)

    def _append(self, cur: psycopg.Connection[Any], head: Head, start: int, generation: int,
                messages: list[Message]) -> None:
        if not messages:
            return
        now = time.time()
        with cur.cursor() as many:
            many.executemany(
                "INSERT INTO messages (branch_id, seq, message, run_generation, created_at)"
                " VALUES (%s, %s, %s::json, %s, %s)",
                [(head.rows, start + i, m.model_dump_json(), generation, now)
                 for i, m in enumerate(messages)],
            )

    def _delete_rows(self, cur: psycopg.Connection[Any], head: Head, start: int) -> None:
        cur.execute("DELETE FROM messages WHERE branch_id = %s AND seq >= %s", (head.rows, start))

    def _insert_branch(self, cur: psycopg.Connection[Any], branch: str, agent_id: str,
                       parent: str | None, at: int, now: float) -> None:
        cur.execute("INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at)"
                    " VALUES (%s, %s, %s, %s, %s)", (branch, agent_id, parent, at, now))

    def _is_bare_pointer(self, cur: psycopg.Connection[Any], branch: str) -> bool:
        row = cur.execute(
            "SELECT parent_id IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM messages WHERE branch_id = %s)"
            " AND NOT EXISTS (SELECT 1 FROM branches c WHERE c.parent_id = %s)"
            " FROM branches WHERE id = %s", (branch, branch, branch)).fetchone()
        return bool(row and row[0])

    def _branch_length(self, cur: psycopg.Connection[Any], branch: str) -> int:
        row = cur.execute("SELECT b.fork_index, (SELECT max(seq) FROM messages WHERE branch_id = b.id)"
                          " FROM branches b WHERE b.id = %s", (branch,)).fetchone()
        if row is None:
            return 0
        return int(row[0]) if row[1] is None else max(int(row[0]), int(row[1]) + 1)

    def _collect_branches(self, cur: psycopg.Connection[Any]) -> None:
        while cur.execute(
            "DELETE FROM branches b WHERE agent_id IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM branches c WHERE c.parent_id = b.id)").rowcount:
            pass
        cur.execute(
            "DELETE FROM messages m USING branches b WHERE m.branch_id = b.id AND b.agent_id IS NULL"
            " AND m.seq >= (SELECT max(c.fork_index) FROM branches c WHERE c.parent_id = b.id)")

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    @contextmanager
    def _decoding(self, what: str) -> Iterator[None]:
        try:
            yield
        except (ValidationError, ValueError, TypeError) as err:
            raise DatabaseError(
                f"the Postgres store at {self._where} holds a damaged {what} "
                f"({type(err).__name__}); fix or delete that row"
            ) from err

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pool.close()

    # --- reading agents and transcripts -----------------------------------------------

    def load_agent(self, agent_id: str, *, transcript: bool = True) -> PersistedAgent | None:
        with self._connection() as conn, conn.transaction():
            # One snapshot for the five reads: a commit landing between them must not
            # pair a new transcript with an old run row.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            rows = conn.execute(
                f"SELECT {AGENT_COLUMNS} FROM agents WHERE id = %s", (agent_id,)).fetchall()
            if not rows:
                return None
            messages = conn.execute(
                f"{_CHAIN} SELECT convert_to(m.message::text, 'UTF8') {_CHAIN_ROWS}",
                (rows[0][14] or agent_id, _END, 0)
            ).fetchall() if transcript else []
            run_row = conn.execute(
                "SELECT run_baseline, run_assistant_committed, run_started_at, pending_turn::text"
                " FROM agents WHERE id = %s", (agent_id,)).fetchone()
            resumable_row = conn.execute(
                "SELECT message FROM resumable_turns WHERE agent_id = %s", (agent_id,)).fetchone()
        with self._decoding(f"record of agent {agent_id}"):
            record = agent_record(rows[0], _sql.POSTGRES.loads)
            started = run_row is not None and run_row[0] is not None
            return PersistedAgent(
                record=record,
                transcript=decode_messages(messages),
                run=RunRecord(
                    generation=record.run_generation, baseline=run_row[0],
                    assistant_committed=bool(run_row[1]), started_at=run_row[2],
                ) if run_row is not None and started else None,
                pending_turn=PendingTurn.model_validate_json(run_row[3])
                if run_row is not None and run_row[3] else None,
                resumable_turn=Message.model_validate(resumable_row[0]) if resumable_row else None,
            )

    def load_messages(self, agent_id: str, start: int = 0, end: int | None = None, *,
                      branch_id: str | None = None) -> list[Message]:
        # As bytes, validated by pydantic in one call (not json.loads, then a validation each).
        with self._connection() as conn, conn.transaction():
            branch = _branch_to_read(conn, agent_id, branch_id)
            rows = conn.execute(
                f"{_CHAIN} SELECT convert_to(m.message::text, 'UTF8') {_CHAIN_ROWS}",
                (branch, end if end is not None else _END, start),
            ).fetchall()
        with self._decoding(f"message of agent {agent_id}"):
            return decode_messages(rows)

    _BRANCH_LAST_SEQ = "(SELECT max(seq) FROM messages m WHERE m.branch_id = b.id)"

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[Any]]:
        with self._connection() as conn, conn.transaction():
            yield conn

    def _checkpoint_rows(self, agent_id: str, branch_id: str | None, start: int,
                         end: int | None) -> list[tuple[Any, ...]]:
        with self._reading() as conn:
            branch = _branch_to_read(conn, agent_id, branch_id)
            return conn.execute(
                f"{_CHAIN} SELECT m.seq, convert_to(m.message::text, 'UTF8'), m.run_generation,"
                f" m.created_at {_CHAIN_ROWS}",
                (branch, end if end is not None else _END, start)).fetchall()

    def vacuum(self) -> None:
        with self._connection() as conn:
            autocommit = conn.autocommit
            conn.autocommit = True  # VACUUM cannot run inside a transaction
            try:
                conn.execute("VACUUM messages")
                conn.execute("VACUUM branches")
            finally:
                conn.autocommit = autocommit

    def record_signal(self) -> RecordSignal:
        return ListenSignal(self)

    def listening_connection(self) -> psycopg.Connection[Any]:
        """A new connection (to `listen_url` when given) that LISTENs on this
        schema's mail channel."""
        url = self.listen_url or self.dsn
        try:
            conn = self._psycopg.connect(url, **self._connect_kwargs)
            conn.execute(f"LISTEN {self._mail_channel}")
        except self._psycopg.Error as err:
            raise DatabaseError(f"cannot listen for mail at {redact_dsn(url)}: "
                                f"{self._reason(err)}") from None
        return conn

    def shares_its_session(self, conn: psycopg.Connection[Any]) -> bool:
        """Whether `conn` goes through a transaction pooler, like this store's
        connections might (see `_sessions_are_shared`)."""
        try:
            with self._connection() as other:
                return _sessions_are_shared(conn, other)
        except self._psycopg.Error as err:
            raise DatabaseError(f"cannot listen for mail at {self._where}: "
                                f"{self._reason(err)}") from None

    def pending_mail_mark(self) -> tuple[Any, ...]:
        """The pending records' count, newest seq and last change: it moves when one is queued."""
        return tuple(self._read(_sql.QUEUE_MARK)[0])

    def say_mail_is_polled(self) -> None:
        """Warn, once per store, that mail is polled for because LISTEN cannot hear."""
        with self._lock:
            if self._told_mail_is_polled:
                return
            self._told_mail_is_polled = True
        log.warning(
            "mail for this kernel's agents is polled for every %.1f s: the connection to %s goes "
            "through a transaction pooler, where LISTEN hears nothing. For wakes at once, give the "
            "store a session to listen on: listen_url=<the server's URL> (PostgresStore(..., "
            "listen_url=...) or ?listen_url=<percent-encoded URL> in the store's URL)",
            ListenSignal.POLL_SECONDS, redact_dsn(self.listen_url or self.dsn))


# --- mail from other hosts ----------------------------------------------------------


class ListenSignal:
    """`LISTEN` on a connection of its own (to `listen_url` when given): every
    mail posted on any host sends a NOTIFY on the schema's channel when it
    commits. A burst of notifications is one signal. A dropped connection is
    reopened, and counts as a signal (mail may have come while it was down).

    Through a transaction pooler the listening session is handed to other
    clients between statements, so no notification would ever arrive: then the
    signal says so once and polls the pending mail instead (as SQLite's does)."""

    POLL_SECONDS = 0.5

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._conn: psycopg.Connection[Any] | None = None
        self._mark: tuple[Any, ...] | None = None  # polling: the pending mail last seen
        self._next_poll = 0.0
        self._listen()

    def _listen(self) -> None:
        self._conn = self._store.listening_connection()
        if self._store.shares_its_session(self._conn):
            self._conn.close()
            self._conn = None
            self._mark = self._store.pending_mail_mark()
            self._store.say_mail_is_polled()

    def wait(self, timeout: float) -> bool:
        if self._mark is not None:
            return self._poll(timeout)
        try:
            if self._conn is None or self._conn.closed:
                self._listen()
                return True
            if not _next_notify(self._conn, timeout):
                return False
            # The rest of a burst, as far as it has arrived (one read: a flood that never
            # ends must not keep this from returning), is this same signal.
            for _ in self._conn.notifies(timeout=0):
                pass
            return True
        except self._store_errors() as err:
            log.debug("listening for mail failed: %s", err)
            if self._conn is not None:
                self._conn.close()
            time.sleep(min(timeout, 1.0))
            return False

    def _poll(self, timeout: float) -> bool:
        time.sleep(max(0.0, min(timeout, self._next_poll - time.monotonic())))
        if time.monotonic() < self._next_poll:
            return False
        self._next_poll = time.monotonic() + self.POLL_SECONDS
        try:
            mark = self._store.pending_mail_mark()
        except StoreError as err:
            log.debug("polling for mail failed: %s", err)
            return False
        changed, self._mark = mark != self._mark, mark
        return changed

    def _store_errors(self) -> tuple[type[Exception], ...]:
        import psycopg

        return (psycopg.Error, StoreError)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


# --- helpers ----------------------------------------------------------------------


def _reason(err: BaseException) -> str:
    """An error's first line, which for libpq names the cause (never the password)."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def _next_notify(conn: psycopg.Connection[Any], timeout: float) -> bool:
    """Whether a notification arrived within `timeout` (one taken off the queue)."""
    notifies = conn.notifies(timeout=timeout, stop_after=1)
    try:
        return next(notifies, None) is not None
    finally:
        notifies.close()  # releases the connection's lock


def _threshold(text: str) -> int | Literal["auto"] | None:
    """`prepare_threshold` from a URL: a count, `none` (never prepare) or `auto`."""
    word = text.strip().lower()
    if word in ("", "none"):
        return None
    if word == "auto":
        return "auto"
    if not word.isdigit():
        raise ConfigError(f"prepare_threshold must be a whole number, 'none' or 'auto', not {text!r}")
    return int(word)


def _sessions_are_shared(conn: psycopg.Connection[Any], other: psycopg.Connection[Any]) -> bool:
    """Whether `conn` and `other` reach the server through a transaction (or
    statement) pooler, which hands a server session to any client between
    transactions: `other`'s transaction then runs in the session `conn` just used
    (PgBouncer hands out the one freed last), or `conn`'s next statement runs in
    another session while `other` holds one. Neither can happen on the server
    itself or through a session-mode pool. A few rounds, as a busy pooler's other
    clients may take the freed session first."""
    def backend(c: psycopg.Connection[Any]) -> int:
        row = c.execute("SELECT pg_backend_pid()").fetchone()
        return int(row[0]) if row else 0

    for _ in range(3):
        mine = backend(conn)
        with other.transaction():
            if backend(other) == mine or backend(conn) != mine:
                return True
    return False


def _head_of(row: tuple[Any, ...] | None, agent_id: str) -> Head:
    if row is None:
        raise StoreError(f"no agent {agent_id} in the store")
    branch = row[0] or agent_id
    return Head(branch, branch, int(row[1]), int(row[2]), row[3])


def _readable(dsn: str, what: str, sources: tuple[str, ...]) -> str:
    """`dsn` if libpq can read it, else a ConfigError that quotes none of its secrets."""
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(dsn)
    except Error as err:
        raise ConfigError(
            f"{what} is not a Postgres connection string libpq can read: "
            f"{scrub(_reason(err), *sources)}. Percent-encode special characters of a URL "
            "(%25 for %, %40 for @, %5B and %5D for brackets), or leave the password out and let "
            "libpq find it in PGPASSWORD or ~/.pgpass"
        ) from None
    return dsn




_END = 2**31 - 1  # "to the end" for a seq (an INTEGER)

# The branches a transcript is read from, head first, each with the position below
# which its rows count (as in SqliteStore): one recursive query, as deep as the
# forks and rewinds behind the head, never as long as the transcript.
_CHAIN = (
    "WITH RECURSIVE chain(branch, below) AS (SELECT %s::text, %s::integer"
    " UNION ALL SELECT b.parent_id, LEAST(b.fork_index, chain.below) FROM branches b"
    " JOIN chain ON b.id = chain.branch WHERE b.parent_id IS NOT NULL)"
)
# The chain's messages from a position (a parameter) on, in transcript order, as `m`:
# each branch's rows below its `below`, read as one range of the (branch_id, seq) key.
# OFFSET 0 keeps the subquery from being pulled up into a join: the planner, which
# cannot know that the chain is a branch or two, then hash-joins it with a scan of the
# whole table, so reading one transcript read every agent's messages (50 agents of
# 1,000 messages: 7 ms a transcript instead of 2, growing with every agent).
_CHAIN_ROWS = (
    "FROM chain CROSS JOIN LATERAL (SELECT seq, message, run_generation, created_at FROM messages"
    " WHERE branch_id = chain.branch AND seq >= %s AND seq < chain.below OFFSET 0) m ORDER BY m.seq"
)


def _branch_to_read(conn: psycopg.Connection[Any], agent_id: str, branch_id: str | None) -> str:
    if branch_id is None:
        row = conn.execute("SELECT branch_id FROM agents WHERE id = %s", (agent_id,)).fetchone()
        return str(row[0]) if row is not None and row[0] else agent_id
    owner = conn.execute("SELECT agent_id FROM branches WHERE id = %s", (branch_id,)).fetchone()
    if owner is None or owner[0] != agent_id:
        raise StoreError(f"agent {agent_id} has no branch {branch_id}; agent.branches() lists its branches")
    return branch_id
