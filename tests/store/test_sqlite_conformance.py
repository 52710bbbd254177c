"""SqliteStore passes the store conformance suite, on a file and in memory."""

from __future__ import annotations

import pytest

from mentra_nb import SqliteStore
from mentra_nb.testing.store_conformance import StoreConformance


class TestSqliteFileStore(StoreConformance):
    @pytest.fixture
    def store(self, db_path):
        s = SqliteStore(db_path)
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, db_path):
        opened: list[SqliteStore] = []

        def open_again() -> SqliteStore:
            opened.append(SqliteStore(db_path))
            return opened[-1]

        yield open_again
        for s in opened:
            s.close()


class TestSqliteMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self):
        s = SqliteStore(":memory:")
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, store):
        # One in-memory database lives in one connection: "another handle" is the same one.
        return lambda: store
