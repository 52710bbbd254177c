"""Store faults: a write that fails, a read-only file, a full disk.

Whatever fails, the runtime reports a `MentraError` (never another exception,
never a hang), the agent's memory matches its file, the file passes
`PRAGMA integrity_check`, and a fresh runtime resumes it and carries on.

The read-only and full-disk cases mount a tiny tmpfs (root only; skipped
otherwise, as SQLite's files cannot be made read-only for root by permissions).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mentra_nb import MentraError, Runtime, SqliteStore, StoreError
from tests.benchmarks.bench_storage import _WRITES
from tests.children import integrity
from tests.conftest import WAIT_LIMIT
from tests.reliability.conftest import digests
from tests.reliability.crash_child import PlanProvider, peek, work
from tests.reliability.oracle import read_agents

pytestmark = pytest.mark.reliability


class FailingStore:
    """Passes everything to `inner`, except that write number `fail_at` raises
    StoreError without touching the file (a transaction that failed)."""

    def __init__(self, inner: SqliteStore, fail_at: int) -> None:
        self.inner, self.fail_at, self.writes = inner, fail_at, 0
        self.failed: str | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in _WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            if self.writes == self.fail_at:
                self.failed = name
                raise StoreError(f"writing to {self.inner.path} failed: disk I/O error (injected "
                                 f"into write {self.writes}, {name})")
            return attr(*args, **kwargs)

        return write


def _runtime(store: Any, seed: int = 1) -> Runtime:
    return Runtime.empty(store=store, runtime_id="faults", tools=[work, peek],
                         providers=[PlanProvider(seed)])


async def _consistent_after_reopen(db: Path) -> None:
    """A fresh runtime on the file: sound, resumable, and able to go on."""
    assert integrity(db) == "ok"
    for name, agent in read_agents(db).items():
        assert not agent.problems and agent.seqs == list(range(len(agent.seqs))), name
        assert agent.message_count == len(agent.raw), name
    store = SqliteStore(db)
    rt = _runtime(store, seed=2)
    try:
        for agent in rt.resume():
            history = agent.history
            answered = {r.tool_use_id for m in history for r in m.tool_results}
            assert all(u.id in answered for m in history for u in m.tool_uses), agent.name
            reply = await asyncio.wait_for(agent.send("after the fault"), WAIT_LIMIT)
            assert reply.text.endswith("<end>")
    finally:
        await rt.aclose()
        store.close()


async def test_a_write_that_fails_at_any_point_is_reported_and_leaves_the_file_consistent(tmp_path):
    # How many writes a clean run makes: every one of them gets its turn to fail.
    clean = FailingStore(SqliteStore(tmp_path / "clean.sqlite"), fail_at=0)
    rt = _runtime(clean)
    agent = rt.spawn("writer", "anthropic:writer")
    for turn in range(2):
        await agent.send(f"turn {turn}")
    await rt.aclose()
    total = clean.writes
    assert total >= 9  # 2 turns of begin, commit, tool results, final commit + the spawn

    failures: dict[str, int] = {}
    for fail_at in range(1, total + 1):
        db = tmp_path / f"fail-{fail_at}.sqlite"
        store = FailingStore(SqliteStore(db), fail_at)
        rt = _runtime(store)
        try:
            try:
                agent = rt.spawn("writer", "anthropic:writer")
            except StoreError:
                continue  # nothing was created; reopening below still checks the file
            for turn in range(2):
                try:
                    await asyncio.wait_for(agent.send(f"turn {turn}"), WAIT_LIMIT)
                except MentraError as err:
                    assert "injected" in str(err), err
                # What the agent shows is what the file holds, fault or not.
                assert agent.history == store.inner.load_messages(agent.id), (fail_at, store.failed)
        finally:
            await rt.aclose()
            store.inner.close()
        failures[store.failed or "none"] = failures.get(store.failed or "none", 0) + 1
        await _consistent_after_reopen(db)
    assert "commit_assistant" in failures and "finish_run" in failures, failures


# --- real filesystems: read-only and full ------------------------------------------------


@contextlib.contextmanager
def _tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _remount(folder: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(folder)], check=True, capture_output=True)


async def test_a_read_only_file_is_a_clear_error_and_stays_untouched(tmp_path):
    with _tmpfs(tmp_path / "fs", "4m") as fs:
        db = fs / "analysis.mentra.sqlite"
        store = SqliteStore(db)
        rt = _runtime(store)
        agent = rt.spawn("writer", "anthropic:writer")
        await agent.send("before")
        await rt.aclose()
        store.close()
        _remount(fs, "ro")
        before = digests(db)
        try:
            with pytest.raises(StoreError) as caught, warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                SqliteStore(db)
            assert str(db) in str(caught.value)
            assert digests(db) == before
        finally:
            _remount(fs, "rw")
        await _consistent_after_reopen(db)


async def _fill(fs: Path) -> tuple[Path, SqliteStore, Runtime, Any, StoreError]:
    """An agent writing 5 KB turns into a 512 KiB filesystem until it is full."""
    db = fs / "analysis.mentra.sqlite"
    store = SqliteStore(db)
    rt = _runtime(store)
    agent = rt.spawn("writer", "anthropic:writer")
    for turn in range(200):
        try:
            await asyncio.wait_for(agent.send(f"turn {turn} " + "x" * 5000), WAIT_LIMIT)
        except StoreError as err:
            return db, store, rt, agent, err
    raise AssertionError("the disk never filled up")


async def test_a_full_disk_is_a_clear_error_and_the_file_comes_back_as_the_agent_showed_it(tmp_path):
    with _tmpfs(tmp_path / "fs", "512k") as fs:
        db, store, rt, agent, error = await _fill(fs)
        try:
            assert "full" in str(error) and str(db) in str(error), error
            assert integrity(db) == "ok"
            shown = agent.history
        finally:
            await rt.aclose()
            store.close()
        _remount(fs, "size=8m")
        # A fresh runtime finishes any rollback the full disk refused: same transcript.
        store = SqliteStore(db)
        rt = _runtime(store, seed=3)
        try:
            [resumed] = rt.resume()
            assert resumed.history == shown
        finally:
            await rt.aclose()
            store.close()
        await _consistent_after_reopen(db)


# Fixed in afce819 (the live agent re-applies recovery before its next run).
async def test_after_a_refused_rollback_the_live_agent_goes_on_once_there_is_room(tmp_path):
    with _tmpfs(tmp_path / "fs", "512k") as fs:
        _db, store, rt, agent, _error = await _fill(fs)
        try:
            _remount(fs, "size=8m")
            agent = rt.resume_agent(agent.id)
            reply = await asyncio.wait_for(agent.send("now there is room"), WAIT_LIMIT)
            assert reply.text.endswith("<end>")
        finally:
            await rt.aclose()
            store.close()
