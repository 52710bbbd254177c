"""Mail wakes on a channel of the schema's own, a flood of notifications costs a
kernel a bounded number of loop callbacks, and listening through a transaction
pooler (where LISTEN hears nothing) is said once and falls back to polling.

NOTIFY on any channel is open to every role of a database: on the shared
`mentra_mail` channel another role's flood (36,000 in 8 s) cost every kernel on the
database one loop callback per notification, and stalled them all."""

from __future__ import annotations

import asyncio
import logging
import time

import psycopg
import pytest

from mentra_nb.runtime._mail_watch import MIN_WAKE_SECONDS, MailWatcher
from mentra_nb.runtime.teams import TeamMessage
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.store import PostgresStore
from mentra_nb.store.postgres import _MIGRATIONS, POSTGRES_SCHEMA_VERSION, ListenSignal

FLOOD = 20_000


class Wakes:
    """A MailWatcher on this test's loop that counts the callbacks it costs the loop."""

    def __init__(self, store: PostgresStore) -> None:
        self.count = 0
        self.watcher = MailWatcher(store, self._woken)

    def _woken(self) -> None:
        self.count += 1

    async def settled(self, quiet: float = 1.0, timeout: float = 30.0) -> int:
        """The count once it stopped growing for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        seen, since = self.count, time.monotonic()
        while time.monotonic() - since < quiet and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            if self.count != seen:
                seen, since = self.count, time.monotonic()
        return self.count

    async def until(self, count: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.count < count:
            assert time.monotonic() < deadline, f"no wake after {timeout} s (count {self.count})"
            await asyncio.sleep(0.02)


def flood(dsn: str, channel: str, count: int = FLOOD) -> None:
    """`count` notifications as fast as one connection sends them, each its own
    transaction (pipelined), as the flood that stalled kernels was."""
    with psycopg.connect(dsn, autocommit=True) as conn, conn.pipeline() as pipeline:
        for _ in range(count):
            conn.execute(f"NOTIFY {channel}")
            pipeline.sync()  # the end of a transaction: each NOTIFY is delivered on its own


def as_role(dsn: str, role: str) -> str:
    return dsn.replace("postgresql://postgres@", f"postgresql://{role}@")


@pytest.fixture
def other_role(pg_dsn: str):
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        database = conn.info.dbname
        conn.execute("DROP ROLE IF EXISTS mallory")
        conn.execute("CREATE ROLE mallory LOGIN")
        conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO mallory')
    yield as_role(pg_dsn, "mallory")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP OWNED BY mallory")
        conn.execute("DROP ROLE mallory")


async def test_another_roles_flood_reaches_no_kernel_and_mail_still_wakes_the_owner(
    pg_dsn: str, other_role: str
) -> None:
    store, poster = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    wakes = Wakes(store)
    wakes.watcher.start()
    try:
        # The channel is named by a token in the schema, which the other role cannot read.
        with psycopg.connect(other_role, autocommit=True) as conn, pytest.raises(
                psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT mail_channel FROM mentra_schema")
        flood(other_role, "mentra_mail")  # the channel every kernel listened on
        assert await wakes.settled() == 0
        team_mail.MAIL.queue(poster, "team", "alice", TeamMessage(sender="user", content="wake up"))
        await wakes.until(1)
    finally:
        wakes.watcher.close()
        store.close()
        poster.close()


async def test_a_burst_on_the_stores_own_channel_is_a_bounded_number_of_wakes(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    channel = store._read("SELECT mail_channel FROM mentra_schema")[0][0]
    wakes = Wakes(store)
    wakes.watcher.start()
    try:
        started = time.monotonic()
        flood(pg_dsn, channel)
        count = await wakes.settled()
        elapsed = time.monotonic() - started
        # One wake per burst as far as it has arrived, and wakes at least MIN_WAKE_SECONDS
        # apart: never one per notification (that was FLOOD callbacks).
        assert 1 <= count <= 2 + elapsed / MIN_WAKE_SECONDS, (count, elapsed)
        team_mail.MAIL.queue(store, "team", "alice", TeamMessage(sender="user", content="wake up"))
        await wakes.until(count + 1)
    finally:
        wakes.watcher.close()
        store.close()


def test_a_schema_written_before_mail_channels_gets_its_own(pg_dsn: str) -> None:
    """A schema 2 (one shared channel) is migrated: a random channel of its own, and
    its mail and agents work as before."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TABLE mentra_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO mentra_schema VALUES (2)")
        for script in _MIGRATIONS[:2]:
            for statement in filter(None, (s.strip() for s in script.split(";"))):
                conn.execute(statement)
        conn.execute("INSERT INTO team_mail (team_id, recipient, message, created_at, updated_at)"
                     """ VALUES ('team', 'alice', '{"from": "lead", "content": "old"}', 0, 0)""")
    store = PostgresStore(pg_dsn)
    try:
        [(version, channel)] = store._read("SELECT version, mail_channel FROM mentra_schema")
        assert version == POSTGRES_SCHEMA_VERSION and channel.startswith("mentra_mail_") and len(channel) == 44
        assert [m.message.content for m in team_mail.MAIL.list(store, "team", "alice")] == ["old"]
        signal = store.record_signal()
        try:
            team_mail.MAIL.queue(store, "team", "alice", TeamMessage(sender="user", content="new"))
            assert signal.wait(30)
        finally:
            signal.close()
    finally:
        store.close()
    # Every kernel of the schema posts where the others listen; another schema has its own.
    again, elsewhere = PostgresStore(pg_dsn), PostgresStore(pg_dsn, schema="elsewhere")
    try:
        assert again._read("SELECT mail_channel FROM mentra_schema")[0][0] == channel
        assert elsewhere._read("SELECT mail_channel FROM mentra_schema")[0][0] != channel
    finally:
        again.close()
        elsewhere.close()


def test_listening_through_a_transaction_pooler_is_said_once_and_mail_is_polled(
    pgbouncer, caplog: pytest.LogCaptureFixture
) -> None:
    """Mail never woke an owner connected through PgBouncer in transaction mode, and
    nothing said so."""
    database = pgbouncer.server.create_database().rsplit("/", 1)[1]
    pooled = PostgresStore(pgbouncer.dsn(database))
    listening = PostgresStore(pgbouncer.dsn(database, listen_at_the_server=True))
    direct = PostgresStore(pgbouncer.server.dsn(database))
    signals = []
    try:
        with caplog.at_level(logging.WARNING, logger="mentra_nb.store"):
            for store in (listening, direct, pooled, pooled):
                signals.append(store.record_signal())
        said = [r.getMessage() for r in caplog.records if "transaction pooler" in r.getMessage()]
        assert len(said) == 1 and "listen_url" in said[0], said
        polled = signals[2]
        assert not polled.wait(ListenSignal.POLL_SECONDS * 2), "no mail, yet a signal"
        team_mail.MAIL.queue(direct, "team", "alice", TeamMessage(sender="user", content="wake up"))
        for signal in signals:
            deadline = time.monotonic() + 30
            while not signal.wait(0.1):
                assert time.monotonic() < deadline, "the mail never raised the signal"
    finally:
        for signal in signals:
            signal.close()
        for store in (pooled, listening, direct):
            store.close()
