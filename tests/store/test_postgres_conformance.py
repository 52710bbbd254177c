"""PostgresStore passes the store conformance suite against a real Postgres server."""

from __future__ import annotations

import pytest

from mentra_nb.store.postgres import PostgresStore
from mentra_nb.testing.store_conformance import StoreConformance


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def store(self, pg_dsn):
        s = PostgresStore(pg_dsn)
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, pg_dsn):
        opened: list[PostgresStore] = []

        def open_again() -> PostgresStore:
            opened.append(PostgresStore(pg_dsn))
            return opened[-1]

        yield open_again
        for s in opened:
            s.close()


class TestPostgresStoreBehindAPooler(TestPostgresStore):
    """As configured for PgBouncer in transaction mode: no server-side prepared statements."""

    @pytest.fixture
    def store(self, pg_dsn):
        s = PostgresStore(pg_dsn, prepare_threshold=None, max_size=2)
        yield s
        s.close()
