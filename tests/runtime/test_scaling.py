"""Issue 14.11: resuming N agents and spawning the N+1st must cost store reads
linear in N (resume) and independent of N (spawn). Counted on a real SQLite
store as records read, never timed."""

from __future__ import annotations

from mentra_nb import Runtime, SqliteStore
from mentra_nb.testing import ScriptedProvider


class CountingStore(SqliteStore):
    """A real SqliteStore that counts the records its reads return."""

    reads = 0

    def list_agents(self, runtime_id=None, **kwargs):
        found = super().list_agents(runtime_id, **kwargs)
        self.reads += len(found) + 1
        return found

    def load_agent(self, agent_id, *, transcript=True):
        self.reads += 1
        return super().load_agent(agent_id, transcript=transcript)

    def load_messages(self, agent_id, start=0, end=None):
        found = super().load_messages(agent_id, start, end)
        self.reads += len(found) + 1
        return found

    def load_state(self, agent_id, key):
        self.reads += 1
        return super().load_state(agent_id, key)


def _runtime(store: SqliteStore) -> Runtime:
    return Runtime.empty(store=store, providers=[ScriptedProvider("anthropic", [])])


async def _reads_to_resume(tmp_path, count: int) -> int:
    db = tmp_path / f"{count}.sqlite"
    rt = _runtime(SqliteStore(db))
    for i in range(count):
        rt.spawn(f"agent{i}", "anthropic:model")
    await rt.aclose()
    store = CountingStore(db)
    rebooted = _runtime(store)
    agents = rebooted.resume()
    # What `%mentra resume --all` prints: every agent's snapshot.
    assert all(a.snapshot.history_len == 0 for a in agents) and len(agents) == count
    reads = store.reads
    await rebooted.aclose()
    return reads


async def test_resuming_agents_reads_the_store_linearly(tmp_path):
    small, large = await _reads_to_resume(tmp_path, 10), await _reads_to_resume(tmp_path, 80)
    # Linear: 8 times the agents, at most 8 times the reads (quadratic was ~64 times).
    assert large <= 8 * small, (small, large)


async def test_spawning_costs_the_same_reads_however_many_agents_exist(tmp_path):
    store = CountingStore(tmp_path / "s.sqlite")
    rt = _runtime(store)
    costs = []
    for i in range(120):
        before = store.reads
        agent = rt.spawn(f"agent{i}", "anthropic:model")
        assert agent.snapshot.history_len == 0
        costs.append(store.reads - before)
    assert costs[10] == costs[119], costs
    await rt.aclose()
