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

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import ValidationError

from mentra_nb.errors import AgentExists, ConfigError, DatabaseError, LeaseLost, StoreError
from mentra_nb.messages import Message, Usage, preview
from mentra_nb.status import AgentStatus
from mentra_nb.store._decoding import decode_messages
from mentra_nb.store._dsn import parse_dsn, redact_dsn, scrub
from mentra_nb.store._lease_rules import (
    describe_holder,
    holder_is_live,
    lease_lost_message,
    lease_unavailable,
)
from mentra_nb.store._rows import (
    AGENT_COLUMNS,
    LEASE_COLUMNS,
    MAIL_COLUMNS,
    REQUEST_COLUMNS,
    agent_record,
    lease_record,
    team_mail,
    team_request,
)
from mentra_nb.store.base import (
    AgentRecord,
    BranchRecord,
    Checkpoint,
    LeaseClaim,
    LeaseRecord,
    MailSignal,
    PendingTurn,
    PersistedAgent,
    RunRecord,
    TeamMail,
    TeamMailState,
    TeamMessage,
    TeamRequest,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["POSTGRES_SCHEMA_VERSION", "PostgresStore", "redact_dsn"]

log = logging.getLogger("mentra_nb.store")

POSTGRES_SCHEMA_VERSION = 3
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
    CREATE TABLE leases (
        agent_id TEXT PRIMARY KEY,
        owner_id TEXT NOT NULL,
        token TEXT NOT NULL,
        runtime_id TEXT NOT NULL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        process_started_at DOUBLE PRECISION NOT NULL,
        label TEXT,
        acquired_at DOUBLE PRECISION NOT NULL,
        heartbeat_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX leases_by_token ON leases (token);
    CREATE TABLE team_mail (
        id BIGSERIAL PRIMARY KEY,
        team_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        message JSON NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        claimed_by TEXT,
        transcript_seq INTEGER,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX team_mail_by_recipient ON team_mail (team_id, recipient, state, id);
    CREATE INDEX team_mail_by_claimer ON team_mail (claimed_by, state);
    CREATE TABLE team_requests (
        id TEXT PRIMARY KEY,
        ord BIGSERIAL NOT NULL,
        team_id TEXT NOT NULL,
        protocol TEXT NOT NULL,
        sender TEXT NOT NULL,
        recipient TEXT NOT NULL,
        content TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        created_at DOUBLE PRECISION NOT NULL,
        resolved_at DOUBLE PRECISION,
        reason TEXT
    );
    CREATE INDEX team_requests_by_team ON team_requests (team_id, created_at, ord);
    """,
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
]

# psycopg's default: a query is prepared on the server after this many runs.
_PREPARE_AFTER = 5

# The database's clock, in unix seconds: every host judges lease expiry by it.
_NOW = "extract(epoch FROM clock_timestamp())::double precision"


class PostgresStore:
    """The Postgres store (needs `pip install mentra-nb[postgres]`).

    `dsn` is a libpq connection string or URL; leave the password out of it and
    let libpq find it in `PGPASSWORD` or `~/.pgpass` (`PGPASSFILE`).
    `schema` puts the tables in that schema (created when missing) instead of
    the first schema of the role's `search_path`. `min_size`/`max_size` size
    the connection pool (a kernel needs few: one for the loop, one for the
    heartbeat; mail listens on a connection of its own). `prepare_threshold=N`
    prepares a query on the server after N runs (psycopg's setting), None never
    does (what a transaction pooler such as PgBouncer needs); the default "auto"
    is 5 on a session of the connection's own, None through a transaction pooler.
    `listen_url` is where mail is listened for when `dsn` goes through a
    transaction pooler (the server itself, or a session-mode pool). The URL may
    carry both as query parameters (`?prepare_threshold=5&listen_url=...`,
    percent-encoded), which is how `%mentra db` and `MENTRA_DB_URL` pass them.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 4,
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
                for statement in _statements(_MIGRATIONS[index]):
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
    def _write(self, agent_id: str | None = None,
               token: str | None = None) -> Iterator[psycopg.Connection[Any]]:
        """One transaction; with `token`, only while that token holds the lease."""
        with self._connection() as conn, conn.transaction():
            if token is not None:
                # FOR SHARE: a takeover's UPDATE of this row waits until we commit.
                row = conn.execute(
                    "SELECT token, pid, host FROM leases WHERE agent_id = %s FOR SHARE", (agent_id,)
                ).fetchone()
                if row is None or row[0] != token:
                    raise LeaseLost(lease_lost_message(
                        str(agent_id), None if row is None else (row[1], row[2])))
            yield conn

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

    # --- agents ---------------------------------------------------------------

    def create_agent(self, record: AgentRecord, *, token: str) -> None:
        self._create(record, token=token, source_id=None, at=0)

    def _create(self, record: AgentRecord, *, token: str, source_id: str | None, at: int) -> None:
        """The agent's row and its first branch (named after it); a fork's reads the
        first `at` messages of `source_id`'s head branch."""
        now = time.time()
        unique = self._psycopg.errors.UniqueViolation
        try:
            with self._write(record.id, token) as conn:
                parent_branch = None
                if source_id is not None:
                    row = conn.execute("SELECT branch_id, message_count FROM agents WHERE id = %s",
                                       (source_id,)).fetchone()
                    if row is None:
                        raise StoreError(f"no agent {source_id} in {self._where} to fork")
                    if not 0 <= at <= row[1]:
                        raise StoreError(f"cannot fork agent {source_id} at {at}: it has {row[1]} "
                                         "committed messages")
                    parent_branch = row[0]
                conn.execute(
                    "INSERT INTO agents (id, runtime_id, name, model, config, status, kind,"
                    " parent_id, role, run_generation, usage, message_count, created_at, updated_at,"
                    " branch_id, forked_from, fork_index)"
                    " VALUES (%s, %s, %s, %s, %s::json, %s::json, %s, %s, %s, %s, %s::json, %s,"
                    " %s, %s, %s, %s, %s)",
                    (
                        record.id, record.runtime_id, record.name, record.model,
                        json.dumps(record.config), record.status.model_dump_json(),
                        record.kind, record.parent_id, record.role, record.run_generation,
                        record.usage.model_dump_json(), at, record.created_at or now, now,
                        record.id, record.forked_from, record.fork_index,
                    ),
                )
                conn.execute(
                    "INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at)"
                    " VALUES (%s, %s, %s, %s, %s)", (record.id, record.id, parent_branch, at, now))
        except StoreError as err:
            cause = err.__cause__
            if not isinstance(cause, unique):
                raise
            if record.kind == "agent" and "agents_unique_lead_name" in str(cause):
                rows = self._read(
                    "SELECT id FROM agents WHERE runtime_id = %s AND name = %s AND kind = 'agent'",
                    (record.runtime_id, record.name),
                )
                existing = rows[0][0] if rows else "unknown"
                raise AgentExists(
                    f"an agent named '{record.name}' already exists in runtime "
                    f"'{record.runtime_id}' (id {existing}); resume it with "
                    f"rt.resume_agent('{existing}') or pick another name"
                ) from None
            raise StoreError(f"agent {record.id} already exists in {self._where}") from cause

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
            record = _agent_record(rows[0])
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

    def list_agents(self, runtime_id: str | None = None, *,
                    parent_id: str | None = None) -> list[AgentRecord]:
        where: list[str] = []
        params: list[Any] = []
        if runtime_id is not None:
            where.append("runtime_id = %s")
            params.append(runtime_id)
        if parent_id is not None:
            where.append("parent_id = %s")
            params.append(parent_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(f"SELECT {AGENT_COLUMNS} FROM agents{clause} ORDER BY created_at, ord",
                          tuple(params))
        with self._decoding("agent record"):
            return [_agent_record(row) for row in rows]

    def set_status(self, agent_id: str, status: AgentStatus, *, token: str) -> None:
        with self._write(agent_id, token) as conn:
            _update_agent(conn, agent_id, status=status)

    # --- runs -----------------------------------------------------------------

    def begin_run(
        self, agent_id: str, run: RunRecord, messages: list[Message], *, status: AgentStatus,
        token: str, clear_resumable: bool = False,
    ) -> None:
        with self._write(agent_id, token) as conn:
            head = _head(conn, agent_id)
            count = head.length
            if count != run.baseline:
                raise StoreError(
                    f"agent {agent_id} has {count} stored messages but the run starts at "
                    f"{run.baseline}; reload the agent (rt.resume_agent) before sending"
                )
            _append(conn, head.branch, count, run.generation, messages)
            conn.execute(
                "UPDATE agents SET run_baseline = %s, run_assistant_committed = %s,"
                " run_started_at = %s, pending_turn = NULL WHERE id = %s",
                (run.baseline, run.assistant_committed, run.started_at or time.time(), agent_id),
            )
            if clear_resumable:
                conn.execute("DELETE FROM resumable_turns WHERE agent_id = %s", (agent_id,))
            _update_agent(conn, agent_id, status=status, run_generation=run.generation,
                          message_count=count + len(messages))

    def checkpoint_pending(self, agent_id: str, pending: PendingTurn, *, token: str) -> None:
        with self._write(agent_id, token) as conn:
            conn.execute("UPDATE agents SET pending_turn = %s::json WHERE id = %s",
                         (pending.model_dump_json(), agent_id))

    def commit_assistant(
        self, agent_id: str, message: Message, *, usage: Usage, status: AgentStatus, token: str
    ) -> None:
        with self._write(agent_id, token) as conn:
            head = _head(conn, agent_id)
            count = head.length
            _append(conn, head.branch, count, head.generation, [message])
            conn.execute("UPDATE agents SET run_assistant_committed = TRUE, pending_turn = NULL"
                         " WHERE id = %s", (agent_id,))
            _update_agent(conn, agent_id, status=status, usage=usage, message_count=count + 1)

    def append_messages(self, agent_id: str, messages: list[Message], *, token: str) -> None:
        with self._write(agent_id, token) as conn:
            head = _head(conn, agent_id)
            _append(conn, head.branch, head.length, head.generation, messages)
            _update_agent(conn, agent_id, message_count=head.length + len(messages))

    def finish_run(
        self, agent_id: str, *, status: AgentStatus, token: str, append: list[Message] | None = None,
        usage: Usage | None = None,
    ) -> None:
        with self._write(agent_id, token) as conn:
            head = _head(conn, agent_id)
            count = head.length
            if append:
                _append(conn, head.branch, count, head.generation, append)
                count += len(append)
            conn.execute(_END_RUN, (agent_id,))
            _update_agent(conn, agent_id, status=status, usage=usage, message_count=count)

    def rollback_run(
        self, agent_id: str, *, status: AgentStatus, resumable: Message | None, token: str
    ) -> None:
        with self._write(agent_id, token) as conn:
            head = _head(conn, agent_id)
            count = head.length
            if head.run_baseline is not None:
                count = head.run_baseline
                forked_after = conn.execute(
                    "SELECT 1 FROM branches WHERE parent_id = %s AND fork_index > %s LIMIT 1",
                    (head.branch, count)).fetchone()
                if forked_after is None:
                    conn.execute("DELETE FROM messages WHERE branch_id = %s AND seq >= %s",
                                 (head.branch, count))
                else:
                    # A fork of the running agent reads messages of this run: keep them
                    # (as a branch) and go on from the baseline on a new head.
                    _new_head(conn, agent_id, head.branch, count)
            conn.execute(_END_RUN, (agent_id,))
            if resumable is not None:
                conn.execute(
                    "INSERT INTO resumable_turns (agent_id, message) VALUES (%s, %s::json)"
                    " ON CONFLICT (agent_id) DO UPDATE SET message = excluded.message",
                    (agent_id, resumable.model_dump_json()),
                )
            _update_agent(conn, agent_id, status=status, message_count=count)

    # --- time travel (the same rules as SqliteStore's) ------------------------------

    def fork_agent(self, record: AgentRecord, *, source_id: str, at: int, token: str) -> None:
        self._create(record, token=token, source_id=source_id, at=at)

    def rewind(self, agent_id: str, to: int, *, token: str) -> str:
        with self._write(agent_id, token) as conn:
            head = _head(conn, agent_id)
            _refuse_during_run(head, agent_id, "rewind")
            if not 0 <= to <= head.length:
                raise StoreError(f"cannot rewind agent {agent_id} to {to}: it has {head.length} messages")
            conn.execute("DELETE FROM resumable_turns WHERE agent_id = %s", (agent_id,))
            if to == head.length:
                return head.branch
            if _is_bare_pointer(conn, head.branch):
                conn.execute("UPDATE branches SET fork_index = %s WHERE id = %s", (to, head.branch))
                _update_agent(conn, agent_id, message_count=to)
                return head.branch
            branch = _new_head(conn, agent_id, head.branch, to)
            _update_agent(conn, agent_id, message_count=to)
            return branch

    def switch_branch(self, agent_id: str, branch_id: str, *, token: str) -> None:
        with self._write(agent_id, token) as conn:
            head = _head(conn, agent_id)
            _refuse_during_run(head, agent_id, "switch branches of")
            owner = conn.execute("SELECT agent_id FROM branches WHERE id = %s", (branch_id,)).fetchone()
            if owner is None or owner[0] != agent_id:
                raise StoreError(
                    f"agent {agent_id} has no branch {branch_id}; agent.branches() lists its branches")
            conn.execute("DELETE FROM resumable_turns WHERE agent_id = %s", (agent_id,))
            if branch_id == head.branch:
                return
            conn.execute("UPDATE agents SET branch_id = %s WHERE id = %s", (branch_id, agent_id))
            _update_agent(conn, agent_id, message_count=_branch_length(conn, branch_id))
            if _is_bare_pointer(conn, head.branch) and head.branch != agent_id:
                conn.execute("DELETE FROM branches WHERE id = %s", (head.branch,))

    def list_branches(self, agent_id: str) -> list[BranchRecord]:
        with self._connection() as conn, conn.transaction():
            head = conn.execute("SELECT branch_id FROM agents WHERE id = %s", (agent_id,)).fetchone()
            rows = conn.execute(
                "WITH RECURSIVE tree(id) AS (SELECT id FROM branches WHERE id = %s AND agent_id = %s"
                " UNION ALL SELECT b.id FROM branches b JOIN tree ON b.parent_id = tree.id"
                " WHERE b.agent_id = %s)"
                " SELECT b.id, b.agent_id, b.parent_id, b.fork_index, b.created_at,"
                " (SELECT max(seq) FROM messages m WHERE m.branch_id = b.id)"
                " FROM tree JOIN branches b ON b.id = tree.id ORDER BY b.created_at, b.id",
                (agent_id, agent_id, agent_id)).fetchall()
        return [
            BranchRecord(id=row[0], agent_id=row[1], parent_id=row[2], fork_index=row[3],
                         length=row[3] if row[5] is None else max(row[3], row[5] + 1),
                         is_head=head is not None and row[0] == head[0], created_at=row[4])
            for row in rows
        ]

    def load_checkpoints(self, agent_id: str, start: int = 0, end: int | None = None, *,
                         branch_id: str | None = None) -> list[Checkpoint]:
        with self._connection() as conn, conn.transaction():
            branch = _branch_to_read(conn, agent_id, branch_id)
            rows = conn.execute(
                f"{_CHAIN} SELECT m.seq, convert_to(m.message::text, 'UTF8'), m.run_generation,"
                f" m.created_at {_CHAIN_ROWS}",
                (branch, end if end is not None else _END, start)).fetchall()
        with self._decoding(f"message of agent {agent_id}"):
            messages = decode_messages(rows, column=1)
        return [
            Checkpoint(index=row[0], role=message.role, preview=preview(message),
                       run_generation=row[2], created_at=row[3])
            for row, message in zip(rows, messages, strict=True)
        ]

    def delete_agents(self, agent_ids: list[str], *, token: str) -> None:
        with self._write() as conn:
            for agent_id in agent_ids:
                row = conn.execute("SELECT token FROM leases WHERE agent_id = %s FOR UPDATE",
                                   (agent_id,)).fetchone()
                known = conn.execute("SELECT 1 FROM agents WHERE id = %s", (agent_id,)).fetchone()
                if known is not None and (row is None or row[0] != token):
                    raise LeaseLost(
                        f"this runtime does not hold the lease of agent {agent_id}, so it cannot "
                        "delete it; resume the agent first")
            ids = list(agent_ids)
            for table, column in (("resumable_turns", "agent_id"), ("state", "agent_id"),
                                  ("leases", "agent_id"), ("team_mail", "team_id"),
                                  ("team_mail", "claimed_by"), ("team_requests", "team_id"),
                                  ("agents", "id")):
                conn.execute(f"DELETE FROM {table} WHERE {column} = ANY(%s)", (ids,))
            conn.execute("UPDATE branches SET agent_id = NULL WHERE agent_id = ANY(%s)", (ids,))
            _collect_branches(conn)

    def vacuum(self) -> None:
        with self._connection() as conn:
            autocommit = conn.autocommit
            conn.autocommit = True  # VACUUM cannot run inside a transaction
            try:
                conn.execute("VACUUM messages")
                conn.execute("VACUUM branches")
            finally:
                conn.autocommit = autocommit

    # --- state ----------------------------------------------------------------

    def load_state(self, agent_id: str, key: str) -> Any | None:
        rows = self._read("SELECT value FROM state WHERE agent_id = %s AND key = %s",
                          (agent_id, key))
        return rows[0][0] if rows else None

    def save_state(self, agent_id: str, key: str, value: Any, *, token: str) -> None:
        encoded = json.dumps(value)
        with self._write(agent_id, token) as conn:
            conn.execute(
                "INSERT INTO state (agent_id, key, value) VALUES (%s, %s, %s::json)"
                " ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value",
                (agent_id, key, encoded),
            )

    def load_runtime_state(self, runtime_id: str, key: str) -> Any | None:
        rows = self._read("SELECT value FROM runtime_state WHERE runtime_id = %s AND key = %s",
                          (runtime_id, key))
        return rows[0][0] if rows else None

    def save_runtime_state(self, runtime_id: str, key: str, value: Any) -> None:
        with self._write() as conn:
            if value is None:
                conn.execute("DELETE FROM runtime_state WHERE runtime_id = %s AND key = %s",
                             (runtime_id, key))
            else:
                conn.execute(
                    "INSERT INTO runtime_state (runtime_id, key, value) VALUES (%s, %s, %s::json)"
                    " ON CONFLICT (runtime_id, key) DO UPDATE SET value = excluded.value",
                    (runtime_id, key, json.dumps(value)),
                )

    # --- leases ---------------------------------------------------------------

    def acquire_lease(self, agent_id: str, claim: LeaseClaim, *, ttl: float) -> None:
        with self._write() as conn:
            now = float(conn.execute(f"SELECT {_NOW}").fetchone()[0])  # type: ignore[index]
            values = (agent_id, claim.owner_id, claim.token, claim.runtime_id, claim.pid,
                      claim.host, claim.process_started_at, claim.label, now, now)
            inserted = conn.execute(
                f"INSERT INTO leases ({LEASE_COLUMNS}) VALUES"
                " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id) DO NOTHING"
                " RETURNING agent_id", values,
            ).fetchone()
            if inserted is not None:
                return
            # FOR UPDATE waits for fenced writes of the holder in flight (they hold the
            # row FOR SHARE), so a takeover lands between two of its writes, never inside one.
            row = conn.execute(f"SELECT {LEASE_COLUMNS} FROM leases WHERE agent_id = %s FOR UPDATE",
                               (agent_id,)).fetchone()
            if row is not None:
                holder = lease_record(row)
                if holder.owner_id != claim.owner_id and holder_is_live(holder, claim, now, ttl):
                    raise lease_unavailable(holder, claim, now, ttl)
                if holder.owner_id != claim.owner_id:
                    log.info("taking over agent %s from %s (gone or expired)", agent_id,
                             describe_holder(holder))
            conn.execute(
                "UPDATE leases SET owner_id = %s, token = %s, runtime_id = %s, pid = %s, host = %s,"
                " process_started_at = %s, label = %s, acquired_at = %s, heartbeat_at = %s"
                " WHERE agent_id = %s",
                (*values[1:], agent_id),
            )

    def renew_leases(self, token: str) -> int:
        with self._write() as conn:
            return conn.execute(f"UPDATE leases SET heartbeat_at = {_NOW} WHERE token = %s",
                                (token,)).rowcount

    def release_leases(self, token: str, agent_ids: list[str] | None = None) -> None:
        with self._write() as conn:
            if agent_ids is None:
                conn.execute("DELETE FROM leases WHERE token = %s", (token,))
            else:
                conn.execute("DELETE FROM leases WHERE token = %s AND agent_id = ANY(%s)",
                             (token, agent_ids))

    def lease_holder(self, agent_id: str) -> LeaseRecord | None:
        rows = self._read(f"SELECT {LEASE_COLUMNS} FROM leases WHERE agent_id = %s", (agent_id,))
        return lease_record(rows[0]) if rows else None

    # --- teams ----------------------------------------------------------------

    def rename_agent(self, agent_id: str, name: str, *, token: str) -> None:
        try:
            with self._write(agent_id, token) as conn:
                conn.execute("UPDATE agents SET name = %s, updated_at = %s WHERE id = %s",
                             (name, time.time(), agent_id))
        except StoreError as err:
            if isinstance(err.__cause__, self._psycopg.errors.UniqueViolation):
                raise AgentExists(f"an agent named '{name}' already exists beside agent "
                                  f"{agent_id}; pick another name") from None
            raise

    def update_agent_profile(
        self, agent_id: str, *, role: str | None, config: dict[str, Any], token: str
    ) -> None:
        with self._write(agent_id, token) as conn:
            conn.execute(
                "UPDATE agents SET role = %s, config = %s::json, updated_at = %s WHERE id = %s",
                (role, json.dumps(config), time.time(), agent_id),
            )

    def post_team_mail(self, team_id: str, recipient: str, message: TeamMessage) -> int:
        with self._write() as conn:
            return _post_mail(conn, self._mail_channel, team_id, recipient, message)

    def claim_team_mail(
        self, team_id: str, recipient: str, *, agent_id: str, transcript_seq: int, token: str
    ) -> list[TeamMail]:
        with self._write(agent_id, token) as conn:
            rows = conn.execute(
                "UPDATE team_mail SET state = 'inflight', claimed_by = %s, transcript_seq = %s,"
                " updated_at = %s WHERE id IN (SELECT id FROM team_mail WHERE team_id = %s"
                " AND recipient = %s AND state = 'pending' ORDER BY id FOR UPDATE)"
                f" RETURNING {MAIL_COLUMNS}",
                (agent_id, transcript_seq, time.time(), team_id, recipient),
            ).fetchall()
        return sorted((_mail(row) for row in rows), key=lambda mail: mail.id)

    def count_team_mail(self, team_id: str, recipient: str, state: TeamMailState = "pending") -> int:
        rows = self._read(
            "SELECT count(*) FROM team_mail WHERE team_id = %s AND recipient = %s AND state = %s",
            (team_id, recipient, state),
        )
        return int(rows[0][0])

    def list_team_mail(
        self, team_id: str, recipient: str | None = None, state: TeamMailState | None = None
    ) -> list[TeamMail]:
        sql = f"SELECT {MAIL_COLUMNS} FROM team_mail WHERE team_id = %s"
        params: list[Any] = [team_id]
        if recipient is not None:
            sql += " AND recipient = %s"
            params.append(recipient)
        if state is not None:
            sql += " AND state = %s"
            params.append(state)
        return [_mail(row) for row in self._read(sql + " ORDER BY id", tuple(params))]

    def inflight_team_mail(self, agent_id: str) -> list[TeamMail]:
        rows = self._read(
            f"SELECT {MAIL_COLUMNS} FROM team_mail WHERE claimed_by = %s AND state = 'inflight'"
            " ORDER BY id",
            (agent_id,),
        )
        return [_mail(row) for row in rows]

    def settle_team_mail(
        self, agent_id: str, *, ack: list[int], requeue: list[int], token: str
    ) -> None:
        now = time.time()
        with self._write(agent_id, token) as conn:
            # Only mail this agent still holds inflight: settling twice changes nothing.
            conn.execute(
                "UPDATE team_mail SET state = 'acked', updated_at = %s WHERE id = ANY(%s)"
                " AND claimed_by = %s AND state = 'inflight'",
                (now, ack, agent_id),
            )
            conn.execute(
                "UPDATE team_mail SET state = 'pending', claimed_by = NULL, transcript_seq = NULL,"
                " updated_at = %s WHERE id = ANY(%s) AND claimed_by = %s AND state = 'inflight'",
                (now, requeue, agent_id),
            )
            if requeue:
                conn.execute(f"NOTIFY {self._mail_channel}")

    def create_team_request(self, request: TeamRequest, message: TeamMessage) -> None:
        try:
            with self._write() as conn:
                conn.execute(
                    f"INSERT INTO team_requests ({REQUEST_COLUMNS})"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (request.id, request.team_id, request.protocol, request.sender,
                     request.recipient, request.content, request.status,
                     request.created_at or time.time(), request.resolved_at, request.reason),
                )
                _post_mail(conn, self._mail_channel, request.team_id, request.recipient, message)
        except StoreError as err:
            if isinstance(err.__cause__, self._psycopg.errors.UniqueViolation):
                raise StoreError(
                    f"team request {request.id} already exists in {self._where}") from None
            raise

    def resolve_team_request(
        self, team_id: str, request_id: str, *, approve: bool, reason: str | None,
        response: TeamMessage,
    ) -> TeamRequest | None:
        with self._write() as conn:
            # Conditional on `pending`, so two answers racing cannot both win.
            row = conn.execute(
                "UPDATE team_requests SET status = %s, resolved_at = %s, reason = %s"
                " WHERE team_id = %s AND id = %s AND status = 'pending'"
                f" RETURNING {REQUEST_COLUMNS}",
                ("approved" if approve else "rejected", time.time(), reason, team_id, request_id),
            ).fetchone()
            if row is None:
                return None
            resolved = team_request(row)
            _post_mail(conn, self._mail_channel, team_id, resolved.sender, response)
            return resolved

    def mail_signal(self) -> MailSignal:
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
        """The pending mail's count, newest id and last change: it moves when mail is posted."""
        rows = self._read("SELECT count(*), coalesce(max(id), 0), coalesce(max(updated_at), 0)"
                          " FROM team_mail WHERE state = 'pending'")
        return tuple(rows[0])

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

    def list_team_requests(self, team_id: str) -> list[TeamRequest]:
        rows = self._read(
            f"SELECT {REQUEST_COLUMNS} FROM team_requests WHERE team_id = %s"
            " ORDER BY created_at, ord",
            (team_id,),
        )
        return [team_request(row) for row in rows]


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


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _post_mail(conn: psycopg.Connection[Any], channel: str, team_id: str, recipient: str,
               message: TeamMessage) -> int:
    now = time.time()
    row = conn.execute(
        "INSERT INTO team_mail (team_id, recipient, message, state, created_at, updated_at)"
        " VALUES (%s, %s, %s::json, 'pending', %s, %s) RETURNING id",
        (team_id, recipient, message.model_dump_json(by_alias=True), now, now),
    ).fetchone()
    # Delivered at commit, to every kernel on every host listening on this schema's
    # channel (see ListenSignal); no payload, so a listener learns only that mail came.
    conn.execute(f"NOTIFY {channel}")
    return int(row[0]) if row else 0


_END_RUN = ("UPDATE agents SET run_baseline = NULL, run_assistant_committed = FALSE,"
            " run_started_at = NULL, pending_turn = NULL WHERE id = %s")


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


class _Head(NamedTuple):
    branch: str
    length: int
    generation: int
    run_baseline: int | None


def _head(conn: psycopg.Connection[Any], agent_id: str) -> _Head:
    row = conn.execute(
        "SELECT branch_id, message_count, run_generation, run_baseline FROM agents WHERE id = %s",
        (agent_id,)).fetchone()
    if row is None:
        raise StoreError(f"no agent {agent_id} in the store")
    return _Head(row[0] or agent_id, int(row[1]), int(row[2]), row[3])


def _branch_to_read(conn: psycopg.Connection[Any], agent_id: str, branch_id: str | None) -> str:
    if branch_id is None:
        row = conn.execute("SELECT branch_id FROM agents WHERE id = %s", (agent_id,)).fetchone()
        return str(row[0]) if row is not None and row[0] else agent_id
    owner = conn.execute("SELECT agent_id FROM branches WHERE id = %s", (branch_id,)).fetchone()
    if owner is None or owner[0] != agent_id:
        raise StoreError(f"agent {agent_id} has no branch {branch_id}; agent.branches() lists its branches")
    return branch_id


def _refuse_during_run(head: _Head, agent_id: str, what: str) -> None:
    if head.run_baseline is not None:
        raise StoreError(
            f"cannot {what} agent {agent_id} while a run is in progress; wait for it or cancel it")


def _new_head(conn: psycopg.Connection[Any], agent_id: str, parent: str, at: int) -> str:
    branch = uuid.uuid4().hex
    conn.execute("INSERT INTO branches (id, agent_id, parent_id, fork_index, created_at)"
                 " VALUES (%s, %s, %s, %s, %s)", (branch, agent_id, parent, at, time.time()))
    conn.execute("UPDATE agents SET branch_id = %s WHERE id = %s", (branch, agent_id))
    return branch


def _is_bare_pointer(conn: psycopg.Connection[Any], branch: str) -> bool:
    row = conn.execute(
        "SELECT parent_id IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM messages WHERE branch_id = %s)"
        " AND NOT EXISTS (SELECT 1 FROM branches c WHERE c.parent_id = %s)"
        " FROM branches WHERE id = %s", (branch, branch, branch)).fetchone()
    return bool(row and row[0])


def _branch_length(conn: psycopg.Connection[Any], branch: str) -> int:
    row = conn.execute("SELECT b.fork_index, (SELECT max(seq) FROM messages WHERE branch_id = b.id)"
                       " FROM branches b WHERE b.id = %s", (branch,)).fetchone()
    if row is None:
        return 0
    return int(row[0]) if row[1] is None else max(int(row[0]), int(row[1]) + 1)


def _collect_branches(conn: psycopg.Connection[Any]) -> None:
    """Delete ownerless branches nothing reads (leaf first, their messages with them);
    trim an ownerless branch a fork still reads to what the fork reads."""
    while conn.execute(
        "DELETE FROM branches b WHERE agent_id IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM branches c WHERE c.parent_id = b.id)").rowcount:
        pass
    conn.execute(
        "DELETE FROM messages m USING branches b WHERE m.branch_id = b.id AND b.agent_id IS NULL"
        " AND m.seq >= (SELECT max(c.fork_index) FROM branches c WHERE c.parent_id = b.id)")


def _append(conn: psycopg.Connection[Any], branch: str, start: int, generation: int,
            messages: list[Message]) -> None:
    if not messages:
        return
    now = time.time()
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO messages (branch_id, seq, message, run_generation, created_at)"
            " VALUES (%s, %s, %s::json, %s, %s)",
            [(branch, start + i, m.model_dump_json(), generation, now) for i, m in enumerate(messages)],
        )


def _update_agent(conn: psycopg.Connection[Any], agent_id: str, *,
                  status: AgentStatus | None = None, usage: Usage | None = None,
                  run_generation: int | None = None, message_count: int | None = None) -> None:
    sets: list[str] = ["updated_at = %s"]
    params: list[float | str | int] = [time.time()]
    if status is not None:
        sets.append("status = %s::json")
        params.append(status.model_dump_json())
    if usage is not None:
        sets.append("usage = %s::json")
        params.append(usage.model_dump_json())
    if run_generation is not None:
        sets.append("run_generation = %s")
        params.append(run_generation)
    if message_count is not None:
        sets.append("message_count = %s")
        params.append(message_count)
    conn.execute(f"UPDATE agents SET {', '.join(sets)} WHERE id = %s",
                 (*params, agent_id))


# psycopg returns JSON columns already decoded.
def _agent_record(row: tuple[Any, ...]) -> AgentRecord:
    return agent_record(row, _as_is)


def _mail(row: tuple[Any, ...]) -> TeamMail:
    return team_mail(row, _as_is)


def _as_is(value: Any) -> Any:
    return value

