"""The notebook on a shared Postgres: `%mentra db postgresql://…`, `MENTRA_DB_URL`,
`JUPYTERHUB_USER` in the runtime id, and `%mentra send` to an agent that another
kernel drives."""

from __future__ import annotations

import json

import pytest

from mentra_nb import ConfigError, PostgresStore
from mentra_nb.notebook._discovery import discover_store
from mentra_nb.notebook._session import NotebookSession
from tests.children import Child
from tests.notebook.conftest import mentra


def test_db_moves_the_notebook_to_postgres_and_shows_the_url(ip, session, pg_dsn, capsys):
    mentra(ip, f"db {pg_dsn}")
    out = capsys.readouterr().out
    assert f"store: {pg_dsn}" in out and "runtime id: notebook" in out
    assert isinstance(session.runtime.store, PostgresStore)
    mentra(ip, "spawn writer")
    other = PostgresStore(pg_dsn)
    try:
        assert [r.name for r in other.list_agents("notebook")] == ["writer"]
    finally:
        other.close()


def test_a_password_in_the_db_magic_is_refused_and_never_shown(ip, pg_dsn, capsys):
    with_password = pg_dsn.replace("postgres@", "postgres:hunter2@")
    with pytest.raises(ConfigError, match="pgpass") as refused:
        mentra(ip, f"db {with_password}")
    assert "hunter2" not in str(refused.value) + capsys.readouterr().out


def test_mentra_db_url_selects_postgres_and_the_password_stays_out_of_messages(pg_dsn, tmp_path):
    secret_url = pg_dsn.replace("postgres@", "postgres:not-checked-by-trust@")
    found = discover_store({}, cwd=tmp_path, environ={"MENTRA_DB_URL": secret_url})
    assert found.url == secret_url and "MENTRA_DB_URL" in found.source
    assert "not-checked" not in found.where
    session = NotebookSession({}, environ={"MENTRA_DB_URL": secret_url})
    try:
        assert isinstance(session.runtime.store, PostgresStore)
        assert "not-checked" not in repr(session.runtime.store)
    finally:
        session.close()


def test_on_a_jupyterhub_a_shared_database_names_the_user_in_the_runtime_id(pg_dsn, tmp_path):
    environ = {"JUPYTERHUB_USER": "alice", "JPY_SESSION_NAME": str(tmp_path / "analysis.ipynb"),
               "MENTRA_DB_URL": pg_dsn}
    assert discover_store({}, cwd=tmp_path, environ=environ).runtime_id == "alice/analysis"
    bob = discover_store({}, cwd=tmp_path, environ={**environ, "JUPYTERHUB_USER": "bob"})
    assert bob.runtime_id == "bob/analysis"
    explicit = discover_store({}, cwd=tmp_path, environ=environ, explicit=pg_dsn)
    assert explicit.runtime_id == "alice/analysis"
    # A file beside the notebook is one user's already: its ids stay as they were.
    del environ["MENTRA_DB_URL"]
    assert discover_store({}, cwd=tmp_path, environ=environ).runtime_id == "analysis"


def test_a_bad_mentra_db_url_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="MENTRA_DB_URL must be a postgresql:// URL"):
        discover_store({}, cwd=tmp_path, environ={"MENTRA_DB_URL": "mysql://x"})


@pytest.mark.process
def test_send_to_an_agent_another_kernel_drives_leaves_it_mail(ip, session, pg_dsn, children, capsys):
    child = Child("tests.hosts.host_child", pg_dsn, "own",
                  env={"MENTRA_HOST_ID": "host-a", "MENTRA_TEST_RUNTIME_ID": "notebook"})
    children.append(child)
    child.ready()
    mentra(ip, f"db {pg_dsn}")
    mentra(ip, "send writer hello from this kernel")
    assert "driven by another kernel" in capsys.readouterr().out
    line = child.wait_for("WOKE writer", timeout=30)
    assert json.loads(line.split(" ", 2)[2]) == "hello from this kernel"
