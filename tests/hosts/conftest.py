"""Two "hosts": a child process whose leases name host-a, and this test process
as host-b (distinct `MENTRA_HOST_ID`s, so neither can judge the other by pid)."""

from __future__ import annotations

import pytest

from tests.children import Child

pytestmark = pytest.mark.process


@pytest.fixture
def host_b(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MENTRA_HOST_ID", "host-b")
    return "host-b"


@pytest.fixture
def start_host_a(children):
    """`start_host_a(store, mode, ttl)`: the child kernel of tests/hosts/host_child.py."""

    def start(location: str, mode: str, ttl: float = 30.0) -> Child:
        child = Child("tests.hosts.host_child", location, mode,
                      env={"MENTRA_HOST_ID": "host-a", "MENTRA_TEST_LEASE_TTL": str(ttl)})
        children.append(child)
        return child

    return start
