"""Issue 14.6: what escaped `send()`/`resume_agent()` untyped, or left a file
changed while it was being refused. Each failure is a `StoreError` naming what
is wrong; the lease is released; nothing is written to a file being refused."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mentra_nb import Runtime, SqliteStore, StoreError
from tests.children import REPO

pytestmark = pytest.mark.reliability


async def _stored_agent(db_path: Path) -> str:
    rt = Runtime.empty(store=SqliteStore(db_path))
    agent = rt.spawn("writer", "test")
    agent.approve  # noqa: B018 - an agent with every part built
    await rt.aclose()
    rt.store.close()
    return agent.id


def _sql(db_path: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute(statement, params)
    conn.commit()
    conn.close()


async def test_a_state_row_that_is_not_json_is_a_store_error_and_releases_the_lease(db_path):
    agent_id = await _stored_agent(db_path)
    _sql(db_path, "INSERT OR REPLACE INTO state (agent_id, key, value) VALUES (?, 'approvals.v1', ?)",
         agent_id, "{not json")
    rt = Runtime.empty(store=SqliteStore(db_path))
    with pytest.raises(StoreError, match=f"damaged state 'approvals.v1' of agent {agent_id}"):
        rt.resume_agent(agent_id)
    assert rt.store.lease_holder(agent_id) is None and rt.agents == []
    await rt.aclose()


async def test_a_config_from_a_newer_version_is_a_store_error_naming_the_agent(db_path):
    agent_id = await _stored_agent(db_path)
    _sql(db_path, "UPDATE agents SET config = ? WHERE id = ?", '{"future_option": true}', agent_id)
    rt = Runtime.empty(store=SqliteStore(db_path))
    with pytest.raises(StoreError, match=r"agent 'writer' \(" + agent_id + r"\).*future_option"):
        rt.resume_agent(agent_id)
    assert rt.store.lease_holder(agent_id) is None
    await rt.aclose()


@pytest.mark.process
@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE as a full disk")
def test_a_full_disk_while_opening_reports_the_disk(tmp_path):
    """A real process whose file size limit stands in for a full disk."""
    code = textwrap.dedent("""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
        from mentra_nb import SqliteStore, StoreError
        try:
            SqliteStore(sys.argv[1])
            print("OPENED")
        except StoreError as err:
            print("StoreError:", err)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.sqlite")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("StoreError:"), out
    assert "cannot rollback" not in out.stdout and "disk" in out.stdout, out.stdout


async def test_a_damaged_file_keeps_its_header_while_the_damage_is_reported(db_path):
    rt = Runtime.empty(store=SqliteStore(db_path))
    for i in range(40):
        rt.spawn(f"agent{i}", "test")
    await rt.aclose()
    rt.store.close()
    conn = sqlite3.connect(db_path)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'agents'").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(db_path.read_bytes())
    start = (root - 1) * page_size
    data[start : start + page_size] = b"\x07" * page_size  # the agents table's root page
    db_path.write_bytes(bytes(data))
    header = db_path.read_bytes()[:100]
    with pytest.raises(StoreError, match="damaged|malformed|not a database"):
        store = SqliteStore(db_path)
        try:
            store.list_agents()
        finally:
            store.close()
    assert db_path.read_bytes()[:100] == header


_AS_UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                    "--inh-caps=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


@pytest.mark.process
@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="as root, needs util-linux's setpriv to drop the right to write any file")
def test_a_read_only_file_is_refused_without_leaving_wal_or_shm_files(tmp_path):
    """A real process for which the file is read-only (as root: without CAP_DAC_OVERRIDE)."""
    target = _fresh(tmp_path / "s.sqlite")
    target.chmod(0o444)
    code = ("import sys\nfrom mentra_nb import SqliteStore, StoreError\n"
            "try:\n    SqliteStore(sys.argv[1]); print('OPENED')\n"
            "except StoreError as err:\n    print('StoreError:', err)\n")
    out = subprocess.run([*_AS_UNPRIVILEGED, sys.executable, "-c", code, str(target)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("StoreError:") and "read-only" in out.stdout, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]


def _fresh(db_path: Path) -> Path:
    SqliteStore(db_path).close()
    return db_path
