"""One string names a store: a SQLite file's path or a Postgres DSN.

    open_store("analysis.mentra.sqlite")                    # SqliteStore
    open_store("postgresql://alice@db.example.org/mentra")  # PostgresStore
    open_store("host=db.example.org dbname=mentra")         # PostgresStore (libpq's keyword form)

This is what `%mentra db` and `MENTRA_DB_URL` accept. A string in libpq's
keyword form is never taken as a file name (it would name a SQLite file after
the password).
"""

from __future__ import annotations

import os
from typing import Any

from mentra_nb.errors import ConfigError
from mentra_nb.store._dsn import has_password, is_dsn
from mentra_nb.store.base import Store
from mentra_nb.store.postgres import PostgresStore
from mentra_nb.store.sqlite import SqliteStore

__all__ = ["dsn_has_password", "is_postgres_url", "open_store"]


def is_postgres_url(location: str | os.PathLike[str]) -> bool:
    """Whether `location` names a Postgres database: a `postgresql://` URL or a
    libpq keyword string (`host=… dbname=…`)."""
    return is_dsn(location)


def dsn_has_password(dsn: str) -> bool:
    """Whether a Postgres URL or keyword string carries a password (its own or its
    `listen_url`'s)."""
    return has_password(dsn)


def open_store(location: str | os.PathLike[str], **postgres: Any) -> Store:
    """A `PostgresStore` for a Postgres URL or keyword string, else a `SqliteStore`
    at that path. Keyword arguments go to `PostgresStore` (`listen_url=`,
    `prepare_threshold=`, `schema=`, …)."""
    if is_postgres_url(location):
        return PostgresStore(str(location), **postgres)
    if postgres:
        raise ConfigError(f"{', '.join(sorted(postgres))}: options of a Postgres store, but "
                          f"{os.fspath(location)!r} names a SQLite file")
    return SqliteStore(location)
