"""The docs' least-privilege setup (docs/guide/postgres.md), run as written: one schema per user, so
on one shared database no user can read or change another's agents; and the
store's own refusals (a newer schema, a foreign `agents` table, no server)."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from mentra_nb import StoreError
from mentra_nb.store.postgres import POSTGRES_SCHEMA_VERSION, PostgresStore
from mentra_nb.testing.store_conformance import _spawn

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "postgres.md"


def guide_sql(marker: str) -> str:
    """The ```sql block of the Postgres guide that follows `marker`."""
    text = GUIDE.read_text()
    after = text[text.index(marker):]
    return re.search(r"```sql\n(.*?)```", after, re.S).group(1)


def run_as_admin(dsn: str, sql: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in [s.strip() for s in re.sub(r"--.*", "", sql).split(";") if s.strip()]:
            conn.execute(statement)


def set_up_users(postgres_server, dsn: str, *users: str) -> dict[str, str]:
    database = dsn.rsplit("/", 1)[1]
    once = guide_sql("<!-- roles: once -->").replace("mentra", database)
    run_as_admin(dsn, once)
    dsns = {}
    for user in users:
        each = guide_sql("<!-- roles: each user -->").replace("alice", user).replace("mentra", database)
        run_as_admin(dsn, each)
        dsns[user] = postgres_server.dsn(database, user=user)
    return dsns


def test_each_user_sees_only_their_own_agents_on_a_shared_database(postgres_server, pg_dsn):
    dsns = set_up_users(postgres_server, pg_dsn, "alice", "bob")
    alice, bob = PostgresStore(dsns["alice"]), PostgresStore(dsns["bob"])
    try:
        assert (alice.schema_name, bob.schema_name) == ("alice", "bob")
        agent_id, _ = _spawn(alice, "writer", "analysis")
        _spawn(bob, "writer", "analysis")  # the same names, apart
        assert [r.id for r in alice.list_agents("analysis")] == [agent_id]
        assert agent_id not in [r.id for r in bob.list_agents("analysis")]
        assert bob.load_agent(agent_id) is None
    finally:
        alice.close()
        bob.close()
    # Even naming alice's schema, bob can neither read nor write it.
    with pytest.raises(StoreError, match="permission denied"):
        PostgresStore(dsns["bob"], schema="alice")
    with psycopg.connect(dsns["bob"]) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT * FROM alice.messages")


def test_a_role_with_no_schema_of_its_own_is_told_what_to_create(postgres_server, pg_dsn):
    database = pg_dsn.rsplit("/", 1)[1]
    run_as_admin(pg_dsn, guide_sql("<!-- roles: once -->").replace("mentra", database))
    run_as_admin(pg_dsn, f"CREATE ROLE carol LOGIN; GRANT CONNECT ON DATABASE {database} TO carol")
    with pytest.raises(StoreError, match="CREATE SCHEMA AUTHORIZATION"):
        PostgresStore(postgres_server.dsn(database, user="carol"))


def test_a_schema_written_by_a_newer_mentra_nb_is_refused_untouched(pg_dsn):
    PostgresStore(pg_dsn).close()
    run_as_admin(pg_dsn, f"UPDATE mentra_schema SET version = {POSTGRES_SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer mentra-nb.*pip install -U"):
        PostgresStore(pg_dsn)
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT version FROM mentra_schema").fetchone()[0] == POSTGRES_SCHEMA_VERSION + 1


def test_another_applications_agents_table_is_refused_untouched(pg_dsn):
    run_as_admin(pg_dsn, "CREATE TABLE agents (id int)")
    with pytest.raises(StoreError, match="not mentra-nb's.*schema="):
        PostgresStore(pg_dsn)
    store = PostgresStore(pg_dsn, schema="mentra")  # beside it, in a schema of its own
    store.close()


def test_an_unreachable_server_is_a_clear_error_without_the_password(postgres_server):
    dsn = f"postgresql://postgres:s3cret@127.0.0.1:{postgres_server.port + 1}/nowhere"
    with pytest.raises(StoreError, match="cannot connect to Postgres") as refused:
        PostgresStore(dsn, connect_timeout=2)
    assert "s3cret" not in str(refused.value)
