"""A batch job's kernel SIGKILLed at random points, resumed each time: every row
ends with exactly one result, rows that were done never run again, and rows that
were in flight are rerun once in a fresh fork (no fork left over, none twice).

30 seeds by default (MENTRA_CRASH_ITERATIONS / MENTRA_CRASH_SEED as in test_crash.py).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mentra_nb.messages import Role
from mentra_nb.runtime.batch import JOB, ROW
from mentra_nb.runtime.batch._totals import JobTotals
from mentra_nb.store.records import DONE, StoredRecord
from mentra_nb.store.sqlite import SqliteStore
from tests.children import Child, integrity
from tests.reliability.batch_child import ROWS
from tests.reliability.conftest import crash_seeds, wait_for_progress

pytestmark = [pytest.mark.reliability, pytest.mark.process]

KILLS = 2


def _totals_match_rows(db: Path, job_id: str) -> None:
    """The totals kept beside the rows (what progress() reads) say what the rows say."""
    store = SqliteStore(db)
    try:
        rows = ROW.list(store, job_id)
        kept = JobTotals(store, job_id, "checker").read()
        assert (kept.done, kept.failed, kept.cancelled, kept.input_tokens, kept.output_tokens) == (
            sum(r.state == DONE for r in rows), sum(r.state == "failed" for r in rows),
            sum(r.state == "cancelled" for r in rows), sum(r.value.input_tokens for r in rows),
            sum(r.value.output_tokens for r in rows))
    finally:
        store.close()


def _done_rows(db: Path, job_id: str) -> dict[int, StoredRecord]:
    store = SqliteStore(db)
    try:
        return {r.value.index: r for r in ROW.list(store, job_id, state=DONE)}  # type: ignore[misc]
    finally:
        store.close()


@pytest.mark.parametrize("seed", crash_seeds(), ids=lambda s: f"seed={s}")
def test_a_killed_batch_job_resumes_with_every_row_exactly_once(seed: int, tmp_path: Path,
                                                                  children: list[Child]) -> None:
    rng = random.Random(seed)
    where = f"(seed {seed}: rerun with MENTRA_CRASH_SEED={seed} MENTRA_CRASH_ITERATIONS=1)"
    db = tmp_path / "batch.sqlite"
    kept: dict[int, StoredRecord] = {}
    job_id = ""
    for kill in range(KILLS):
        child = Child("tests.reliability.batch_child", str(db))
        children.append(child)
        job_id = child.ready()[0]
        # Somewhere between "just started" and "nearly done" of what is left.
        target = len(kept) + rng.randrange(0, max(1, (ROWS - len(kept)) // 2))
        wait_for_progress(child, target)
        child.kill()
        assert integrity(db) == "ok", where
        _totals_match_rows(db, job_id)
        done = _done_rows(db, job_id)
        for index, record in kept.items():
            # A finished row never runs again: its record is exactly as it was.
            assert done.get(index) == record, f"row {index} changed after it was done {where}"
        kept = done
    child = Child("tests.reliability.batch_child", str(db))
    children.append(child)
    assert child.ready()[0] == job_id, f"the rerun map call started another job {where}"
    child.wait_for("ALLDONE", timeout=120)
    child.close()

    store = SqliteStore(db)
    try:
        [job] = JOB.list(store, "batch")
        assert job.value.state == "finished" and job.value.total == ROWS, where
        rows = ROW.list(store, job_id)
        assert sorted(r.value.index for r in rows) == list(range(ROWS)), where
        assert all(r.state == DONE for r in rows), where
        _totals_match_rows(db, job_id)
        for index, record in kept.items():
            assert next(r for r in rows if r.value.index == index) == record, where
        for r in rows:
            assert r.value.output == {"label": "a", "confidence": 0}, where
        agents = store.list_agents("batch")
        [source] = [a for a in agents if a.name == "clf"]
        forks = sorted((a.name for a in agents if a.forked_from == source.id),
                       key=lambda name: int(name.rsplit("-", 1)[1]))
        # One fork per row: an in-flight row's half-run fork was replaced, never kept beside.
        assert forks == [f"job-{i}" for i in range(ROWS)], where
        for a in agents:
            if a.forked_from != source.id:
                continue
            persisted = store.load_agent(a.id)
            assert persisted is not None
            transcript = persisted.transcript
            index = int(a.name.rsplit("-", 1)[1])
            users = [m for m in transcript if m.role is Role.USER]
            assert [m.text for m in users] == [f"Classify row {index}: review number {index}"], where
            assert transcript[-1].role is Role.ASSISTANT, where
    finally:
        store.close()
