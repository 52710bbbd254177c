"""A comparison's kernel SIGKILLed at random points, resumed each time: every
(row, agent) ends with exactly one result in exactly one fork, pairs that were done
never run again, and the judge function's verdicts are one per row.

30 seeds by default (MENTRA_CRASH_ITERATIONS / MENTRA_CRASH_SEED as in test_crash.py).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mentra_nb.messages import Role
from mentra_nb.runtime.batch import COMPARE, JOB, ROW, VERDICT
from mentra_nb.store.records import DONE, StoredRecord
from mentra_nb.store.sqlite import SqliteStore
from tests.children import Child, integrity
from tests.reliability.compare_child import AGENTS, ROWS
from tests.reliability.conftest import crash_seeds, wait_for_progress

pytestmark = [pytest.mark.reliability, pytest.mark.process]

KILLS = 2


def _done_pairs(db: Path) -> dict[tuple[str, int], StoredRecord]:
    store = SqliteStore(db)
    try:
        found: dict[tuple[str, int], StoredRecord] = {}
        for job in JOB.list(store, "cmp"):
            for r in ROW.list(store, job.value.job_id, state=DONE):
                found[(job.value.name, r.value.index)] = r  # type: ignore[assignment]
        return found
    finally:
        store.close()


@pytest.mark.parametrize("seed", crash_seeds(), ids=lambda s: f"seed={s}")
def test_a_killed_comparison_resumes_with_every_row_and_agent_exactly_once(
        seed: int, tmp_path: Path, children: list[Child]) -> None:
    rng = random.Random(seed)
    where = f"(seed {seed}: rerun with MENTRA_CRASH_SEED={seed} MENTRA_CRASH_ITERATIONS=1)"
    db = tmp_path / "compare.sqlite"
    pairs = ROWS * len(AGENTS)
    kept: dict[tuple[str, int], StoredRecord] = {}
    compare_id = ""
    for _kill in range(KILLS):
        child = Child("tests.reliability.compare_child", str(db))
        children.append(child)
        compare_id = child.ready()[0]
        target = len(kept) + rng.randrange(0, max(1, (pairs - len(kept)) // 2))
        wait_for_progress(child, target)
        child.kill()
        assert integrity(db) == "ok", where
        done = _done_pairs(db)
        for pair, record in kept.items():
            assert done.get(pair) == record, f"{pair} changed after it was done {where}"
        kept = done
    child = Child("tests.reliability.compare_child", str(db))
    children.append(child)
    assert child.ready()[0] == compare_id, f"the rerun compare call started another comparison {where}"
    child.wait_for("ALLDONE", timeout=120)
    child.close()

    store = SqliteStore(db)
    try:
        [spec] = COMPARE.list(store, "cmp")
        assert spec.value.state == "finished", where
        agents = store.list_agents("cmp")
        for member in spec.value.contestants:
            job = JOB.get(store, "cmp", member.job_name)
            assert job is not None and job.value.state == "finished", where
            rows = ROW.list(store, job.value.job_id)
            assert sorted(r.value.index for r in rows) == list(range(ROWS)), where
            assert all(r.state == DONE for r in rows), where
            for r in rows:
                pair = (member.job_name, r.value.index)
                if pair in kept:
                    assert r == kept[pair], where
            forks = sorted((a for a in agents if a.forked_from == member.agent_id),
                           key=lambda a: int(a.name.rsplit("-", 1)[1]))
            # One fork per (row, agent): an in-flight row's half-run fork was replaced.
            assert [a.name for a in forks] == [f"{member.job_name}-{i}" for i in range(ROWS)], where
            for fork in forks:
                persisted = store.load_agent(fork.id)
                assert persisted is not None
                index = int(fork.name.rsplit("-", 1)[1])
                users = [m.text for m in persisted.transcript if m.role is Role.USER]
                assert users == [f"Classify row {index}: review number {index}"], where
                assert persisted.transcript[-1].role is Role.ASSISTANT, where
        verdicts = VERDICT.list(store, compare_id)
        assert sorted(v.value.index for v in verdicts) == list(range(ROWS)), where
        assert all(v.value.verdict == {"row": v.value.index, "agree": True} for v in verdicts), where
    finally:
        store.close()
