"""What a Postgres connection string may say, and what errors about it never say:
its password (libpq quotes the part of a string it cannot read, which may be the
password or the whole URL). A string in libpq's keyword form opens Postgres and is
never taken as a SQLite file's name; mentra-nb's own options ride in the URL."""

from __future__ import annotations

import logging
import os
import traceback
from pathlib import Path
from urllib.parse import quote

import pytest

from mentra_nb.errors import ConfigError, DatabaseError, MentraError
from mentra_nb.notebook import magic_hint
from mentra_nb.notebook._discovery import discover_store
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.store import PostgresStore, SqliteStore, open_store

SECRET = "Zq8-hunter2"


def _everything_shown(err: BaseException) -> str:
    """The error as a notebook or a log would show it: message, chain and traceback."""
    return "".join(traceback.format_exception(err))


@pytest.mark.parametrize("dsn", [
    f"postgresql://alice:{SECRET}%zz@db.example.org/mentra",     # a bad percent-escape
    f"postgresql://alice:{SECRET}@[::1:5433/mentra",              # an unclosed IPv6 bracket
    f"postgres://alice:{quote(SECRET)}@db.example.org/mentra?sslmode=bogus%zz",
    f"host=db.example.org dbname=mentra password='{SECRET}",       # an unclosed quote
    f"host=db.example.org password={SECRET} sslmode=verify-full colour=blue",  # an unknown key
    "postgresql://alice@db.example.org/mentra?listen_url="
    + quote(f"postgresql://alice:{SECRET}%zz@db.example.org/mentra", safe=""),
], ids=["percent", "ipv6", "query", "quote", "keyword", "listen_url"])
def test_a_connection_string_libpq_cannot_read_is_refused_without_its_password(
    dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError) as caught:
        open_store(dsn)
    shown = _everything_shown(caught.value)
    assert "libpq can read" in shown and "PGPASSWORD" in shown, shown
    assert SECRET not in shown and SECRET not in caplog.text, shown
    assert os.listdir(tmp_path) == [], "a file was made for a connection string"


def test_a_keyword_connection_string_opens_postgres_never_a_file(
    postgres_server, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq's `host=… password=…` form was taken as a file name: a SQLite file named
    after the password appeared in the working folder."""
    monkeypatch.chdir(tmp_path)
    database = pg_dsn.rsplit("/", 1)[1]
    store = open_store(f"host=127.0.0.1 port={postgres_server.port} dbname={database} "
                       f"user=postgres password={SECRET}")
    try:
        assert isinstance(store, PostgresStore)
        assert SECRET not in repr(store) and SECRET not in store.where
        assert store.list_agents() == []
    finally:
        store.close()
    assert os.listdir(tmp_path) == []


def test_the_url_carries_the_poolers_options_and_psycopg_never_sees_them(pg_dsn: str) -> None:
    """`?prepare_threshold=0` used to fail as "invalid URI query parameter", so
    `%mentra db`, MENTRA_DB_URL and open_store could not pass it."""
    url = f"{pg_dsn}?prepare_threshold=0&listen_url={quote(pg_dsn, safe='')}&connect_timeout=5"
    store = open_store(url)
    try:
        assert isinstance(store, PostgresStore)
        assert store.dsn == f"{pg_dsn}?connect_timeout=5" and store.listen_url == pg_dsn
        with store._connection() as conn:
            assert conn.prepare_threshold == 0
        signal = store.record_signal()
        try:
            team_mail.MAIL.queue(store, "team", "alice", _mail())
            assert signal.wait(30)
        finally:
            signal.close()
    finally:
        store.close()
    with pytest.raises(ConfigError, match="prepare_threshold must be a whole number, 'none' or 'auto'"):
        open_store(f"{pg_dsn}?prepare_threshold=soon")


def test_a_store_prepares_statements_only_in_a_session_of_its_own(pg_dsn: str, pgbouncer) -> None:
    """Through a transaction pooler a statement prepared in one server session is
    missing (or already exists) in the next: the store finds out when it opens."""
    database = pg_dsn.rsplit("/", 1)[1]
    for dsn, asked, prepares in ((pg_dsn, {}, 5), (pgbouncer.dsn(database), {}, None),
                                 (pg_dsn, {"prepare_threshold": None}, None),
                                 (f"{pgbouncer.dsn(database)}?prepare_threshold=auto", {}, None),
                                 (f"{pg_dsn}?prepare_threshold=none", {}, None)):
        store = open_store(dsn, **asked)
        try:
            with store._connection() as conn:
                assert conn.prepare_threshold == prepares, (dsn, asked)
        finally:
            store.close()


def test_open_store_refuses_postgres_options_for_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="listen_url: options of a Postgres store"):
        open_store(tmp_path / "a.sqlite", listen_url="postgresql://db/mentra")
    store = open_store(tmp_path / "a.sqlite")
    assert isinstance(store, SqliteStore)
    store.close()


def test_mentra_db_refuses_a_password_in_the_listen_url_too(tmp_path: Path) -> None:
    """The notebook would keep it."""
    for url in (f"postgresql://alice@db/mentra?listen_url={quote(f'postgresql://alice:{SECRET}@db/m', safe='')}",
                f"host=db dbname=mentra password={SECRET}"):
        with pytest.raises(ConfigError, match="leave the password out") as caught:
            discover_store({}, explicit=url, cwd=tmp_path, environ={})
        assert SECRET not in str(caught.value)


def test_a_postgres_failure_in_a_notebook_does_not_point_at_state_files() -> None:
    """A refused connection was followed by "%mentra db PATH keeps this notebook's
    agents in another state file", which cannot help with a database."""
    with pytest.raises(DatabaseError) as caught:
        PostgresStore(f"postgresql://alice:{SECRET}@127.0.0.1:1/mentra", connect_timeout=2)
    assert SECRET not in _everything_shown(caught.value)
    hint = magic_hint(caught.value)
    assert hint is not None and "state file" not in hint and "%mentra db" in hint
    assert isinstance(caught.value, MentraError)


def test_schema_through_a_pooler_says_how_to_choose_the_schema_instead(pgbouncer) -> None:
    """PgBouncer refuses the startup `options` that carry schema='s search_path."""
    database = pgbouncer.server.create_database().rsplit("/", 1)[1]
    with pytest.raises(DatabaseError, match=r"ALTER ROLE <role> SET search_path = mentra"):
        PostgresStore(pgbouncer.dsn(database), schema="mentra")


def _mail():
    from mentra_nb.runtime.teams import TeamMessage

    return TeamMessage(sender="user", content="wake up")
