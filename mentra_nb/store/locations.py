"""One string names a store: a SQLite file's path or a Postgres URL.

    open_store("analysis.mentra.sqlite")                 # SqliteStore
    open_store("postgresql://alice@db.example.org/mentra")  # PostgresStore

This is what `%mentra db` and `MENTRA_DB_URL` accept.
"""

from __future__ import annotations

import os

from mentra_nb.store.base import Store
from mentra_nb.store.postgres import PostgresStore
from mentra_nb.store.sqlite import SqliteStore

__all__ = ["is_postgres_url", "open_store"]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: str | os.PathLike[str]) -> bool:
    return isinstance(location, str) and location.lower().startswith(_POSTGRES_SCHEMES)


def open_store(location: str | os.PathLike[str]) -> Store:
    """A `PostgresStore` for a `postgresql://` URL, else a `SqliteStore` at that path."""
    if is_postgres_url(location):
        return PostgresStore(str(location))
    return SqliteStore(location)
