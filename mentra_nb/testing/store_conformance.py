"""The conformance suite every `Store` implementation must pass.

Subclass it in a test module and provide two fixtures: `store`, a fresh store,
and `reopen`, a callable returning a second handle on the same storage (as
another process would see it):

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self, tmp_path): ...
        @pytest.fixture
        def reopen(self, store): return lambda: MyStore(store.path)
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

import psutil
import pytest
from pydantic import BaseModel

from mentra_nb.errors import (
    AgentExists,
    ConfigError,
    LeaseLost,
    LeaseUnavailable,
    RecordConflict,
    StoreError,
)
from mentra_nb.messages import ContentBlock, Message, Usage
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.runtime.teams.mail import TeamMessage, TeamRequest
from mentra_nb.status import AgentStatus, PendingToolUse
from mentra_nb.store.base import (
    AgentRecord,
    LeaseClaim,
    LeaseRecord,
    PendingTurn,
    PersistedAgent,
    RunRecord,
    Store,
)
from mentra_nb.store.records import CLAIMED, DONE, PENDING, Put, RecordKind, Update

__all__ = ["StoreConformance"]


class _Note(BaseModel):
    text: str
    n: int = 0
    cost: float | None = None


class _Job(BaseModel):
    input: str
    output: str | None = None


# Record kinds of a made-up extension, as a real one declares its own.
_NOTES = RecordKind("conformance.notes", _Note)
_JOBS = RecordKind("conformance.jobs", _Job)


def _claim(runtime_id: str = "nb", *, pid: int | None = None, started_at: float | None = None,
           owner_id: str | None = None, host: str | None = None) -> LeaseClaim:
    pid = os.getpid() if pid is None else pid
    if started_at is None:
        started_at = psutil.Process(pid).create_time()
    return LeaseClaim(
        owner_id=owner_id or f"owner-{uuid.uuid4().hex}",
        token=uuid.uuid4().hex,
        runtime_id=runtime_id,
        pid=pid,
        host=host or socket.gethostname(),
        process_started_at=started_at,
    )


def _loaded(store: Store, agent_id: str) -> PersistedAgent:
    loaded = store.load_agent(agent_id)
    assert loaded is not None, f"agent {agent_id} is not in the store"
    return loaded


def _holder(store: Store, agent_id: str) -> LeaseRecord:
    holder = store.lease_holder(agent_id)
    assert holder is not None, f"nobody holds the lease of agent {agent_id}"
    return holder


def _spawn(store: Store, name: str = "writer", runtime_id: str = "nb", **fields: Any) -> tuple[str, str]:
    """Create an agent under a fresh lease; returns (agent_id, token)."""
    agent_id = uuid.uuid4().hex
    claim = _claim(runtime_id)
    store.acquire_lease(agent_id, claim, ttl=30)
    now = time.time()
    store.create_agent(
        AgentRecord(id=agent_id, runtime_id=runtime_id, name=name, model="test:default",
                    created_at=now, updated_at=now, **fields),
        token=claim.token,
    )
    return agent_id, claim.token


def _fork(store: Store, source_id: str, at: int, name: str = "fork") -> tuple[str, str]:
    """Fork `source_id` at `at` under a fresh lease; returns (agent_id, token)."""
    agent_id = uuid.uuid4().hex
    claim = _claim()
    store.acquire_lease(agent_id, claim, ttl=30)
    now = time.time()
    store.fork_agent(
        AgentRecord(id=agent_id, runtime_id="nb", name=name, model="test:default", created_at=now,
                    updated_at=now, forked_from=source_id, fork_index=at),
        source_id=source_id, at=at, token=claim.token,
    )
    return agent_id, claim.token


def _texts(store: Store, agent_id: str, start: int = 0, end: int | None = None, *,
           branch_id: str | None = None) -> list[str]:
    return [m.text for m in store.load_messages(agent_id, start, end, branch_id=branch_id)]


def _conversation(store: Store, n: int, name: str = "writer") -> tuple[str, str]:
    """An agent with `n` committed messages m0..m{n-1} (one finished run)."""
    agent_id, token = _spawn(store, name)
    _start(store, agent_id, token, "m0")
    store.finish_run(agent_id, status=AgentStatus.finished(), token=token,
                     append=[Message.assistant(f"m{i}") for i in range(1, n)])
    return agent_id, token


def _start(store: Store, agent_id: str, token: str, text: str = "hello", generation: int = 1) -> None:
    baseline = len(store.load_messages(agent_id))
    store.begin_run(agent_id, RunRecord(generation=generation, baseline=baseline),
                    [Message.user(text)], status=AgentStatus.awaiting_model(), token=token)


class StoreConformance:
    """Behaviour every store must have. Needs fixtures `store` and `reopen`."""

    store: Store
    reopen: Callable[[], Store]

    # --- agents ------------------------------------------------------------------

    def test_a_created_agent_loads_back_with_an_empty_transcript(self, store: Store) -> None:
        agent_id, _ = _spawn(store, config={"system": "be brief"}, role="researcher")
        loaded = store.load_agent(agent_id)
        assert loaded is not None
        assert loaded.record.name == "writer"
        assert loaded.record.config == {"system": "be brief"}
        assert loaded.record.role == "researcher"
        assert loaded.transcript == []
        assert loaded.run is None and loaded.pending_turn is None and loaded.resumable_turn is None

    def test_an_unknown_agent_loads_as_none(self, store: Store) -> None:
        assert store.load_agent("no-such-agent") is None

    def test_agents_are_listed_in_creation_order_and_filtered_by_runtime(self, store: Store) -> None:
        first, _ = _spawn(store, "a", "nb")
        _spawn(store, "b", "other")
        third, _ = _spawn(store, "c", "nb", kind="teammate", parent_id=first)
        assert [r.id for r in store.list_agents("nb")] == [first, third]
        assert store.list_agents("nb")[1].is_teammate
        assert [r.name for r in store.list_agents()] == ["a", "b", "c"]

    def test_status_changes_are_persisted(self, store: Store, reopen: Callable[[], Store]) -> None:
        agent_id, token = _spawn(store)
        store.set_status(agent_id, AgentStatus.failed("boom"), token=token)
        assert _loaded(reopen(), agent_id).record.status == AgentStatus.failed("boom")

    # --- runs ----------------------------------------------------------------------

    def test_usage_keeps_its_cost_and_an_unknown_cost_stays_unknown(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token)
        priced = Usage(input_tokens=100, output_tokens=3, cache_read_tokens=2000, cost_usd=0.00123)
        store.commit_assistant(agent_id, Message.assistant("one"), usage=priced,
                               status=AgentStatus.streaming(), token=token)
        assert _loaded(store, agent_id).record.usage == priced
        unknown = priced + Usage(input_tokens=5)  # a call without a price
        assert unknown.cost_usd is None
        store.finish_run(agent_id, status=AgentStatus.finished(), token=token, usage=unknown)
        assert _loaded(store, agent_id).record.usage.cost_usd is None
        assert store.list_agents()[0].usage == unknown

    def test_a_committed_turn_is_appended_and_ends_the_pending_turn(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token)
        store.checkpoint_pending(agent_id, PendingTurn(run_generation=1, current_text="Hel"), token=token)
        pending = _loaded(store, agent_id).pending_turn
        assert pending is not None and pending.current_text == "Hel"
        store.commit_assistant(agent_id, Message.assistant("Hello"), usage=Usage(output_tokens=3),
                               status=AgentStatus.streaming(), token=token)
        loaded = _loaded(store, agent_id)
        assert loaded.pending_turn is None
        assert loaded.run is not None and loaded.run.assistant_committed
        assert loaded.record.usage == Usage(output_tokens=3)
        store.finish_run(agent_id, status=AgentStatus.finished(), token=token)
        loaded = _loaded(store, agent_id)
        assert loaded.run is None
        assert loaded.transcript == [Message.user("hello"), Message.assistant("Hello")]
        assert loaded.record.message_count == 2
        assert loaded.record.run_generation == 1

    def test_pending_tool_uses_are_checkpointed(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token)
        pending = PendingTurn(run_generation=1, pending_tool_uses=[
            PendingToolUse(id="t1", name="grep", input_json='{"pattern": "x')])
        store.checkpoint_pending(agent_id, pending, token=token)
        assert _loaded(store, agent_id).pending_turn == pending

    def test_rollback_deletes_the_run_and_keeps_its_message_for_resume(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token, "first")
        store.commit_assistant(agent_id, Message.assistant("one"), usage=Usage(),
                               status=AgentStatus.finished(), token=token)
        store.finish_run(agent_id, status=AgentStatus.finished(), token=token)
        _start(store, agent_id, token, "second", generation=2)
        store.commit_assistant(agent_id, Message.assistant(ContentBlock.tool_use("t", "x")),
                               usage=Usage(), status=AgentStatus.executing_tool("t", "x"), token=token)
        store.rollback_run(agent_id, status=AgentStatus.interrupted(),
                           resumable=Message.user("second"), token=token)
        loaded = _loaded(store, agent_id)
        assert loaded.transcript == [Message.user("first"), Message.assistant("one")]
        assert loaded.record.message_count == 2
        assert loaded.run is None
        assert loaded.resumable_turn == Message.user("second")
        assert loaded.record.status == AgentStatus.interrupted()
        # The next run starts where the rollback left the transcript and clears the replay.
        store.begin_run(agent_id, RunRecord(generation=3, baseline=2), [Message.user("second")],
                        status=AgentStatus.awaiting_model(), token=token, clear_resumable=True)
        assert _loaded(store, agent_id).resumable_turn is None

    def test_a_run_cannot_start_at_the_wrong_baseline(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        with pytest.raises(StoreError, match="starts at 5"):
            store.begin_run(agent_id, RunRecord(generation=1, baseline=5), [Message.user("x")],
                            status=AgentStatus.awaiting_model(), token=token)
        assert _loaded(store, agent_id).run is None

    def test_finish_run_can_append_results_in_the_same_step(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token)
        result = Message.user(ContentBlock.tool_result("t", "interrupted", is_error=True))
        store.finish_run(agent_id, status=AgentStatus.interrupted(), token=token, append=[result])
        assert _loaded(store, agent_id).transcript[-1] == result

    def test_every_block_kind_round_trips_exactly(self, store: Store, reopen: Callable[[], Store]) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token)
        message = Message.assistant(
            ContentBlock.thinking("let me see", signature="sig/+=\u00e9"),
            ContentBlock.redacted_thinking("opaque==data"),
            ContentBlock.text("Hi \u2603 \"quoted\"\n"),
            ContentBlock.tool_use("call-1", "grep", {"pattern": "a|b", "n": [1, 2.5, None]}),
        )
        store.commit_assistant(agent_id, message, usage=Usage(), status=AgentStatus.streaming(), token=token)
        results = Message.user(ContentBlock.tool_result("call-1", "no match", is_error=True),
                               ContentBlock.image("image/png", "iVBORw0KGgo="))
        store.append_messages(agent_id, [results], token=token)
        assert reopen().load_messages(agent_id) == [Message.user("hello"), message, results]

    def test_a_tool_calls_arguments_read_back_in_the_models_key_order(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        # A prompt cache keys on exact bytes: a store that reorders object keys
        # (Postgres jsonb does) would make every reloaded prefix a cache miss.
        agent_id, token = _spawn(store)
        _start(store, agent_id, token)
        arguments = {"zeta": 1, "a": {"long_key": 2, "k": 3}, "middle": [4]}
        message = Message.assistant(ContentBlock.tool_use("call-1", "grep", arguments))
        store.commit_assistant(agent_id, message, usage=Usage(), status=AgentStatus.streaming(), token=token)
        [stored] = reopen().load_messages(agent_id, 1)
        assert stored.model_dump_json() == message.model_dump_json()

    def test_transcript_pages_are_slices_in_order(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token, "m0")
        store.append_messages(agent_id, [Message.assistant(f"m{i}") for i in range(1, 10)], token=token)
        assert [m.text for m in store.load_messages(agent_id, 3, 6)] == ["m3", "m4", "m5"]
        assert [m.text for m in store.load_messages(agent_id, 8)] == ["m8", "m9"]

    # --- state -------------------------------------------------------------------------

    def test_state_values_round_trip_per_agent_and_key(self, store: Store, reopen: Callable[[], Store]) -> None:
        agent_id, token = _spawn(store)
        value = {"agents": {"/root/a": {"depth": 1}}, "mailbox": []}
        store.save_state(agent_id, "ext.v1", value, token=token)
        assert reopen().load_state(agent_id, "ext.v1") == value
        assert store.load_state(agent_id, "other") is None

    def test_a_runtimes_records_round_trip_per_runtime_unfenced_and_delete(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        # What a runtime-wide setting (its MCP servers, say) needs: no lease, one per runtime.
        _NOTES.put(store, "nb", _Note(text="time server"))
        got = _NOTES.get(reopen(), "nb")
        assert got is not None and got.value.text == "time server"
        assert _NOTES.get(store, "other-nb") is None
        _NOTES.delete(store, "nb")
        assert _NOTES.get(reopen(), "nb") is None

    # --- leases --------------------------------------------------------------------------

    def test_a_write_without_the_lease_is_refused_and_changes_nothing(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _start(store, agent_id, token)
        before = store.load_agent(agent_id)
        with pytest.raises(LeaseLost):
            store.commit_assistant(agent_id, Message.assistant("stale"), usage=Usage(),
                                   status=AgentStatus.finished(), token="not-the-holder")
        with pytest.raises(LeaseLost):
            store.save_state(agent_id, "k", 1, token="not-the-holder")
        assert store.load_agent(agent_id) == before

    def test_the_same_owner_reacquires_and_fences_out_its_older_token(self, store: Store) -> None:
        agent_id, old_token = _spawn(store)
        holder = _holder(store, agent_id)
        newer = LeaseClaim(**{**holder.model_dump(include=set(LeaseClaim.model_fields)),
                              "token": uuid.uuid4().hex})
        store.acquire_lease(agent_id, newer, ttl=30)
        with pytest.raises(LeaseLost):
            store.set_status(agent_id, AgentStatus.idle(), token=old_token)
        store.set_status(agent_id, AgentStatus.finished(), token=newer.token)

    def test_a_live_foreign_holder_is_named_in_lease_unavailable(self, store: Store) -> None:
        agent_id, _ = _spawn(store)
        with pytest.raises(LeaseUnavailable, match=f"pid {os.getpid()}") as info:
            store.acquire_lease(agent_id, _claim("other-runtime"), ttl=30)
        assert info.value.holder.runtime_id == "nb"
        assert info.value.expires_in is None  # held while its process runs, however silent

    def test_a_dead_holder_on_this_host_is_taken_over_at_once(self, store: Store) -> None:
        agent_id = uuid.uuid4().hex
        # A process that started at another time is not the holder: its pid was recycled.
        dead = _claim(started_at=psutil.Process().create_time() - 3600)
        store.acquire_lease(agent_id, dead, ttl=30)
        taker = _claim("other")
        store.acquire_lease(agent_id, taker, ttl=30)
        assert _holder(store, agent_id).token == taker.token

    def test_a_lead_agents_name_is_unique_in_its_runtime(self, store: Store) -> None:
        first, _ = _spawn(store, "writer", "nb")
        agent_id = uuid.uuid4().hex
        claim = _claim("nb")
        store.acquire_lease(agent_id, claim, ttl=30)
        twin = AgentRecord(id=agent_id, runtime_id="nb", name="writer", model="test:default",
                           created_at=time.time(), updated_at=time.time())
        with pytest.raises(AgentExists, match=f"already exists in runtime 'nb' \\(id {first}\\)"):
            store.create_agent(twin, token=claim.token)
        assert [r.id for r in store.list_agents("nb")] == [first]
        # Another runtime, or a teammate of the same name, is no twin.
        _spawn(store, "writer", "other")
        mate, _ = _spawn(store, "writer", "nb", kind="teammate", parent_id=first)
        assert [r.id for r in store.list_agents(parent_id=first)] == [mate]
        assert store.list_agents("other", parent_id=first) == []

    def test_a_renamed_agent_frees_its_name_and_keeps_its_transcript(self, store: Store) -> None:
        old, token = _spawn(store, "writer", "nb")
        _start(store, old, token, "remember me")
        other, _ = _spawn(store, "critic", "nb")
        with pytest.raises(AgentExists):
            store.rename_agent(old, "critic", token=token)
        store.rename_agent(old, "writer.replaced-1", token=token)
        new, _ = _spawn(store, "writer", "nb")
        names = {r.id: r.name for r in store.list_agents("nb")}
        assert names == {old: "writer.replaced-1", other: "critic", new: "writer"}
        assert [m.text for m in store.load_messages(old)] == ["remember me"]

    def test_a_live_holder_on_this_host_keeps_its_lease_however_old_its_heartbeat(
            self, store: Store) -> None:
        # A loop blocked by a tool stops heartbeats but the process lives: taking
        # over would run the tool's side effects a second time.
        agent_id = uuid.uuid4().hex
        store.acquire_lease(agent_id, _claim(), ttl=30)
        time.sleep(0.05)
        with pytest.raises(LeaseUnavailable, match=f"pid {os.getpid()}"):
            store.acquire_lease(agent_id, _claim("other"), ttl=0.01)

    def test_an_expired_heartbeat_is_taken_over(self, store: Store) -> None:
        agent_id = uuid.uuid4().hex
        remote = _claim(host="another-host.example")
        store.acquire_lease(agent_id, remote, ttl=30)
        with pytest.raises(LeaseUnavailable, match="another-host.example") as refused:
            store.acquire_lease(agent_id, _claim("other"), ttl=30)
        # It says when the lease runs out if the holder stays silent.
        assert refused.value.expires_in is not None and 0 < refused.value.expires_in <= 30
        time.sleep(0.05)
        taker = _claim("other")
        store.acquire_lease(agent_id, taker, ttl=0.01)
        assert _holder(store, agent_id).token == taker.token

    def test_renew_moves_the_heartbeat_and_release_frees_only_that_token(self, store: Store) -> None:
        a, token_a = _spawn(store, "a")
        b, token_b = _spawn(store, "b")
        before = _holder(store, a).heartbeat_at
        time.sleep(0.01)
        assert store.renew_leases(token_a) == 1
        assert _holder(store, a).heartbeat_at > before
        store.release_leases(token_a)
        assert store.lease_holder(a) is None
        assert _holder(store, b).token == token_b

    # --- records ---------------------------------------------------------------------------

    def test_records_round_trip_typed_per_kind_scope_and_key(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        first = _NOTES.put(store, "nb", _Note(text="one"), "a")
        _NOTES.put(store, "nb", _Note(text="two", n=2), "b")
        _NOTES.put(store, "other-nb", _Note(text="elsewhere"), "a")
        _JOBS.put(store, "nb", _Job(input="not a note"), "a")
        again = reopen()
        got = _NOTES.get(again, "nb", "a")
        assert got is not None and got.value == _Note(text="one") and got.seq == first.seq
        assert [(r.key, r.value.text) for r in _NOTES.list(again, "nb")] == [("a", "one"), ("b", "two")]
        assert _NOTES.get(again, "nb", "missing") is None
        assert _NOTES.count(again) == 3 and _JOBS.count(again, "nb") == 1
        replaced = _NOTES.put(store, "nb", _Note(text="one again"), "a")
        assert replaced.seq == first.seq  # overwritten in place: its place in the order stays
        assert [r.value.text for r in _NOTES.list(reopen(), "nb")] == ["one again", "two"]
        assert _NOTES.delete(store, "nb", "a") == 1
        assert _NOTES.delete(store, "nb", None) == 1
        assert _NOTES.list(reopen(), "nb") == [] and _NOTES.count(store, "other-nb") == 1

    def test_a_records_batch_is_one_transaction_refused_whole_on_a_conflict(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        _NOTES.put(store, "nb", _Note(text="taken"), "a")
        with pytest.raises(RecordConflict):
            store.write_records([_NOTES.put_op("nb", _Note(text="new"), "b"),
                                 _NOTES.put_op("nb", _Note(text="again"), "a", replace=False)])
        assert [r.key for r in _NOTES.list(reopen(), "nb")] == ["a"]
        with pytest.raises(RecordConflict):
            store.write_records([_NOTES.put_op("nb", _Note(text="new"), "b"),
                                 _NOTES.update_op("nb", "missing", _Note(text="x"))])
        assert [r.key for r in _NOTES.list(reopen(), "nb")] == ["a"]
        put, updated = store.write_records([_NOTES.put_op("nb", _Note(text="new"), "b"),
                                            _NOTES.update_op("nb", "a", state="closed")])
        assert (put.key, updated.state) == ("b", "closed")

    def test_an_update_can_require_the_state_it_expects_so_two_racing_cannot_both_win(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        _NOTES.put(store, "team", _Note(text="plan"), "req-1", state="pending")
        won = _NOTES.update(store, "team", "req-1", _Note(text="approved"), state="approved",
                            expect_state="pending")
        assert (won.state, won.value.text) == ("approved", "approved")
        with pytest.raises(RecordConflict):
            _NOTES.update(reopen(), "team", "req-1", _Note(text="rejected"), state="rejected",
                          expect_state="pending")
        got = _NOTES.get(reopen(), "team", "req-1")
        assert got is not None and (got.state, got.value.text) == ("approved", "approved")

    def test_an_update_can_require_the_claimer_it_expects(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        agent_id, token = _spawn(store)
        other_id, other_token = _spawn(store, "reader")
        _NOTES.put(store, "pool", _Note(text="row"), "r1", state="pending")
        [first] = _NOTES.claim(store, "pool", claimer=agent_id, token=token)
        _NOTES.settle(store, agent_id, requeue=[first.seq], token=token)
        _NOTES.claim(store, "pool", claimer=other_id, token=other_token)
        # The first claimer's late result finds the record claimed, but not by it.
        with pytest.raises(RecordConflict):
            _NOTES.update(reopen(), "pool", "r1", _Note(text="late"), state="done",
                          expect_state="claimed", expect_claimer=agent_id)
        done = _NOTES.update(reopen(), "pool", "r1", _Note(text="result"), state="done",
                             expect_state="claimed", expect_claimer=other_id)
        assert (done.state, done.value.text, done.claimed_by) == ("done", "result", other_id)

    def test_fenced_record_writes_need_the_agents_lease(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        _NOTES.put(store, agent_id, _Note(text="mine"), agent_id=agent_id, token=token)
        with pytest.raises(LeaseLost):
            _NOTES.put(store, agent_id, _Note(text="stale"), agent_id=agent_id, token="not-the-holder")
        with pytest.raises(LeaseLost):
            store.write_records([Update(kind=_NOTES.name, scope=agent_id, state="x")],
                                agent_id=agent_id, token="not-the-holder")
        got = _NOTES.get(store, agent_id)
        assert got is not None and (got.value.text, got.state) == ("mine", "")

    def test_queued_records_are_claimed_oldest_first_then_settled_once(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        worker, token = _spawn(store, "worker")
        seqs = [_JOBS.append(store, "batch", _Job(input=f"row {i}"), lane="a", state=PENDING).seq
                for i in range(3)]
        _JOBS.append(store, "batch", _Job(input="other lane"), lane="b", state=PENDING)
        claimed = _JOBS.claim(store, "batch", "a", claimer=worker, token=token, limit=2,
                              claim={"transcript_seq": 7})
        assert [r.seq for r in claimed] == seqs[:2]
        assert {(r.state, r.claimed_by, str(r.claim)) for r in claimed} == {
            (CLAIMED, worker, "{'transcript_seq': 7}")}
        assert _JOBS.count(store, "batch", lane="a", state=PENDING) == 1
        assert [r.seq for r in _JOBS.list(reopen(), claimed_by=worker, state=CLAIMED)] == seqs[:2]
        assert _JOBS.settle(store, worker, done=[seqs[0]], requeue=[seqs[1]], token=token) == 2
        # Settling again, or records it does not hold, changes nothing.
        assert _JOBS.settle(store, worker, done=seqs, requeue=seqs, token=token) == 0
        rows = {r.seq: r for r in _JOBS.list(reopen(), "batch", lane="a")}
        assert (rows[seqs[0]].state, rows[seqs[0]].claimed_by) == (DONE, worker)
        assert (rows[seqs[1]].state, rows[seqs[1]].claimed_by, rows[seqs[1]].claim) == (PENDING, None, None)
        assert [r.seq for r in _JOBS.claim(store, "batch", "a", claimer=worker, token=token)] == seqs[1:]
        assert _JOBS.claim(store, "batch", "a", claimer=worker, token=token) == []

    def test_records_are_tallied_by_state_with_their_numeric_fields_added_up(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        for i, state in enumerate([PENDING, DONE, DONE, "failed", DONE]):
            _NOTES.put(store, "job", _Note(text=f"row {i}", n=i, cost=None if i == 4 else i / 4), f"r{i}",
                       lane="rows", state=state)
        _NOTES.put(store, "job", _Note(text="another lane", n=7), "s", lane="other", state=DONE)
        _NOTES.put(store, "other-job", _Note(text="elsewhere", n=100), "r0", lane="rows", state=DONE)
        _JOBS.put(store, "job", _Job(input="another kind"), "j", lane="rows", state=DONE)
        got = _NOTES.tally(reopen(), "job", lane="rows", sums=["n", "cost"])
        assert sorted(got) == [DONE, "failed", PENDING]
        done = got[DONE]
        assert (done.count, done.sums, done.counted) == (3, {"n": 7.0, "cost": 0.75}, {"n": 3, "cost": 2})
        assert (got["failed"].count, got["failed"].sums["cost"]) == (1, 0.75)
        assert (got[PENDING].count, got[PENDING].sums, got[PENDING].counted) == (
            1, {"n": 0.0, "cost": 0.0}, {"n": 1, "cost": 1})
        assert _NOTES.tally(store, "job")[DONE].count == 4 and _NOTES.tally(store, "nobody") == {}
        assert _NOTES.tally(store, "job", sums=["text"])[DONE].counted == {"text": 0}  # not numbers
        with pytest.raises(ConfigError, match="_Note has no field 'size'"):
            _NOTES.tally(store, "job", sums=["size"])
        with pytest.raises(ConfigError, match="cannot add up payload field"):
            store.tally_records(_NOTES.name, sums=["n) FROM records; --"])

    def test_claiming_records_needs_the_claimers_lease(self, store: Store) -> None:
        worker, _ = _spawn(store, "worker")
        _JOBS.append(store, "batch", _Job(input="x"), state=PENDING)
        with pytest.raises(LeaseLost):
            _JOBS.claim(store, "batch", claimer=worker, token="not-the-holder")
        assert _JOBS.count(store, "batch", state=PENDING) == 1

    def test_workers_claiming_at_once_through_their_own_handles_never_share_a_record(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        import threading

        seqs = {_JOBS.append(store, "batch", _Job(input=f"row {i}"), state=PENDING).seq
                for i in range(40)}
        workers = [(*_spawn(store, f"worker{i}"), reopen()) for i in range(3)]
        taken: list[list[int]] = [[] for _ in workers]
        failures: list[BaseException] = []

        def work(index: int) -> None:
            agent_id, token, handle = workers[index]
            try:
                while claimed := _JOBS.claim(handle, "batch", claimer=agent_id, token=token, limit=2):
                    taken[index].extend(r.seq for r in claimed)
                    _JOBS.settle(handle, agent_id, done=[r.seq for r in claimed], token=token)
            except BaseException as err:  # reported below, not lost in the thread
                failures.append(err)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(workers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not failures, failures
        every = [seq for seqs_of_one in taken for seq in seqs_of_one]
        assert sorted(every) == sorted(seqs)  # each record claimed exactly once
        assert _JOBS.count(store, "batch", state=DONE) == 40

    def test_a_record_whose_payload_no_longer_matches_its_model_is_a_clear_store_error(
        self, store: Store
    ) -> None:
        store.write_records([Put(kind=_NOTES.name, scope="nb", key="bad", value={"n": "many"})])
        with pytest.raises(StoreError, match=r"damaged conformance\.notes record.*'bad'"):
            _NOTES.get(store, "nb", "bad")

    def test_deleting_an_agent_deletes_the_records_it_owns_or_holds(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        agent_id, token = _spawn(store)
        _NOTES.put(store, agent_id, _Note(text="its own"))
        _JOBS.append(store, "batch", _Job(input="claimed by it"), state=PENDING)
        _JOBS.claim(store, "batch", claimer=agent_id, token=token)
        _NOTES.put(store, "nb", _Note(text="the runtime's"))
        store.delete_agents([agent_id], token=token)
        again = reopen()
        assert _NOTES.list(again, agent_id) == [] and _JOBS.list(again) == []
        assert [r.value.text for r in _NOTES.list(again)] == ["the runtime's"]

    # --- teams ---------------------------------------------------------------------------

    def test_team_mail_is_claimed_in_order_then_acked(self, store: Store, reopen: Callable[[], Store]) -> None:
        lead, _ = _spawn(store, "lead")
        alice, token = _spawn(store, "alice", kind="teammate", parent_id=lead)
        first = team_mail.queue_mail(store, lead, "alice", TeamMessage(sender="lead", content="one"))
        second = team_mail.queue_mail(store, lead, "alice", TeamMessage(sender="bob", content="two"))
        team_mail.queue_mail(store, lead, "bob", TeamMessage(sender="lead", content="not alice's"))
        assert team_mail.count_mail(store, lead, "alice") == 2
        claimed = team_mail.claim_mail(store, lead, "alice", agent_id=alice, transcript_seq=4, token=token)
        assert [(m.id, m.message.content) for m in claimed] == [(first, "one"), (second, "two")]
        assert {(m.state, m.claimed_by, m.transcript_seq) for m in claimed} == {("inflight", alice, 4)}
        assert team_mail.count_mail(store, lead, "alice") == 0
        assert [m.id for m in team_mail.inflight_mail(reopen(), alice)] == [first, second]
        team_mail.settle_mail(store, alice, ack=[first, second], requeue=[], token=token)
        assert team_mail.inflight_mail(store, alice) == []
        assert [m.state for m in team_mail.list_mail(store, lead, "alice")] == ["acked", "acked"]
        assert team_mail.count_mail(store, lead, "bob") == 1

    def test_requeued_team_mail_is_pending_again_and_settling_twice_changes_nothing(self, store: Store) -> None:
        lead, _ = _spawn(store, "lead")
        alice, token = _spawn(store, "alice", kind="teammate", parent_id=lead)
        mail_id = team_mail.queue_mail(store, lead, "alice", TeamMessage(sender="lead", content="x"))
        team_mail.claim_mail(store, lead, "alice", agent_id=alice, transcript_seq=0, token=token)
        team_mail.settle_mail(store, alice, ack=[], requeue=[mail_id], token=token)
        [mail] = team_mail.list_mail(store, lead, "alice")
        assert (mail.state, mail.claimed_by, mail.transcript_seq) == ("pending", None, None)
        team_mail.settle_mail(store, alice, ack=[mail_id], requeue=[], token=token)  # no longer inflight
        assert team_mail.list_mail(store, lead, "alice", "pending") == [mail]

    def test_claiming_team_mail_needs_the_claimers_lease(self, store: Store) -> None:
        lead, _ = _spawn(store, "lead")
        alice, _ = _spawn(store, "alice", kind="teammate", parent_id=lead)
        team_mail.queue_mail(store, lead, "alice", TeamMessage(sender="lead", content="x"))
        with pytest.raises(LeaseLost):
            team_mail.claim_mail(store, lead, "alice", agent_id=alice, transcript_seq=0, token="not-the-holder")
        assert team_mail.count_mail(store, lead, "alice") == 1

    def test_mail_posted_through_another_handle_raises_the_mail_signal(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        signal = store.record_signal()
        try:
            other = reopen()
            if other is store:
                pytest.skip("one connection: no other process can post (in-memory store)")
            agent_id, token = _spawn(store)
            store.checkpoint_pending(agent_id, PendingTurn(run_generation=1, current_text="x"),
                                     token=token)
            assert not signal.wait(0.3), "a write that queued no mail raised the signal"
            team_mail.queue_mail(other, agent_id, "writer", TeamMessage(sender="user", content="wake up"))
            assert signal.wait(10)
        finally:
            signal.close()

    def test_team_messages_round_trip_with_their_optional_fields(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        message = TeamMessage(type="response", sender="lead", content="no \u2603", timestamp=1700000000,
                              request_id="req-1", protocol="plan_approval", approve=False)
        team_mail.queue_mail(store, "team", "alice", message)
        [mail] = team_mail.list_mail(reopen(), "team")
        assert mail.message == message
        assert mail.message.for_model() == {
            "type": "response", "from": "lead", "content": "no \u2603", "timestamp": 1700000000,
            "request_id": "req-1", "protocol": "plan_approval", "approve": False,
        }

    def test_a_team_request_is_recorded_with_its_mail_and_resolved_once(self, store: Store) -> None:
        request = TeamRequest(id="req-1", team_id="team", protocol="plan_approval", sender="alice",
                              recipient="lead", content="the plan", created_at=time.time())
        team_mail.create_request(store, request, TeamMessage(type="request", sender="alice",
                                                             content="the plan", request_id="req-1"))
        assert team_mail.list_requests(store, "team") == [request]
        assert team_mail.list_mail(store, "team", "lead")[0].message.request_id == "req-1"
        response = TeamMessage(type="response", sender="lead", content="too risky",
                               request_id="req-1", approve=False)
        resolved = team_mail.resolve_request(store, "team", "req-1", approve=False,
                                             reason="too risky", response=response)
        assert resolved is not None
        assert (resolved.status, resolved.reason) == ("rejected", "too risky")
        assert resolved.resolved_at is not None
        assert [m.message for m in team_mail.list_mail(store, "team", "alice")] == [response]
        # A second answer loses and queues nothing.
        assert team_mail.resolve_request(store, "team", "req-1", approve=True, reason=None,
                                         response=response) is None
        assert len(team_mail.list_mail(store, "team", "alice")) == 1
        assert team_mail.list_requests(store, "team")[0].status == "rejected"

    def test_an_agent_profile_change_is_fenced_and_persisted(self, store: Store) -> None:
        agent_id, token = _spawn(store, "alice", kind="teammate", role="researcher")
        with pytest.raises(LeaseLost):
            store.update_agent_profile(agent_id, role="x", config={}, token="not-the-holder")
        store.update_agent_profile(agent_id, role="reviewer", config={"max_rounds": 3}, token=token)
        record = _loaded(store, agent_id).record
        assert (record.role, record.config) == ("reviewer", {"max_rounds": 3})

    # --- time travel: forks, rewinds, branches, deletion ------------------------------

    def test_a_fork_reads_its_sources_first_messages_and_both_go_their_own_way(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        source, source_token = _conversation(store, 6)
        fork, fork_token = _fork(store, source, 4)
        record = _loaded(store, fork).record
        assert (record.message_count, record.forked_from, record.fork_index) == (4, source, 4)
        assert _texts(store, fork) == ["m0", "m1", "m2", "m3"]
        _start(store, fork, fork_token, "f4", generation=1)
        store.append_messages(source, [Message.assistant("m6")], token=source_token)
        again = reopen()
        assert _texts(again, fork) == ["m0", "m1", "m2", "m3", "f4"]
        assert _texts(again, source) == [f"m{i}" for i in range(7)]
        assert _texts(again, fork, 3, 5) == ["m3", "f4"]  # a slice across the fork point

    def test_a_fork_of_a_fork_reads_through_both(self, store: Store) -> None:
        source, _ = _conversation(store, 5)
        child, child_token = _fork(store, source, 3, "child")
        store.append_messages(child, [Message.assistant("c3"), Message.assistant("c4")], token=child_token)
        grandchild, _ = _fork(store, child, 4, "grandchild")
        assert _texts(store, grandchild) == ["m0", "m1", "m2", "c3"]
        assert _texts(store, grandchild, 2) == ["m2", "c3"]

    def test_a_fork_past_the_sources_messages_is_refused(self, store: Store) -> None:
        source, _ = _conversation(store, 2)
        with pytest.raises(StoreError, match="2 committed messages"):
            _fork(store, source, 3)
        with pytest.raises(StoreError):
            _fork(store, "no-such-agent", 0)

    def test_a_fork_needs_its_own_lease_and_a_free_lead_name(self, store: Store) -> None:
        source, _ = _conversation(store, 2)
        now = time.time()
        with pytest.raises(LeaseLost):
            store.fork_agent(AgentRecord(id=uuid.uuid4().hex, runtime_id="nb", name="x",
                                         model="test:default", created_at=now),
                             source_id=source, at=1, token="nobody")
        with pytest.raises(AgentExists):
            _fork(store, source, 1, name="writer")

    def test_rolling_back_a_run_keeps_the_messages_a_fork_reads(self, store: Store) -> None:
        source, token = _conversation(store, 2)
        _start(store, source, token, "m2", generation=2)
        store.commit_assistant(source, Message.assistant("m3"), usage=Usage(),
                               status=AgentStatus.streaming(), token=token)
        fork, _ = _fork(store, source, 4)  # forked mid-run: its last committed state
        store.rollback_run(source, status=AgentStatus.interrupted(), resumable=Message.user("m2"),
                           token=token)
        assert _texts(store, source) == ["m0", "m1"]
        assert _texts(store, fork) == ["m0", "m1", "m2", "m3"]
        _start(store, source, token, "again", generation=3)
        assert _texts(store, source) == ["m0", "m1", "again"]
        assert _texts(store, fork) == ["m0", "m1", "m2", "m3"]

    def test_a_rewind_keeps_the_old_messages_as_a_branch_to_switch_back_to(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        agent_id, token = _conversation(store, 4)
        first_head = _loaded(store, agent_id).record.branch_id
        store.rollback_run(agent_id, status=AgentStatus.interrupted(), resumable=Message.user("x"),
                           token=token)  # no run: leaves a resumable turn only
        head = store.rewind(agent_id, 2, token=token)
        assert head != first_head
        loaded = _loaded(store, agent_id)
        assert (loaded.record.branch_id, loaded.record.message_count) == (head, 2)
        assert [m.text for m in loaded.transcript] == ["m0", "m1"]
        assert loaded.resumable_turn is None
        _start(store, agent_id, token, "n2", generation=2)
        store.finish_run(agent_id, status=AgentStatus.finished(), token=token,
                         append=[Message.assistant("n3")])
        branches = reopen().list_branches(agent_id)
        assert [(b.id, b.parent_id, b.fork_index, b.length, b.is_head) for b in branches] == [
            (first_head, None, 0, 4, False), (head, first_head, 2, 4, True)]
        assert _texts(store, agent_id, branch_id=first_head) == ["m0", "m1", "m2", "m3"]
        store.switch_branch(agent_id, first_head, token=token)
        assert _texts(reopen(), agent_id) == ["m0", "m1", "m2", "m3"]
        assert _loaded(store, agent_id).record.message_count == 4
        store.switch_branch(agent_id, head, token=token)
        assert _texts(store, agent_id) == ["m0", "m1", "n2", "n3"]

    def test_rewinding_twice_leaves_no_empty_branch(self, store: Store) -> None:
        agent_id, token = _conversation(store, 5)
        head = store.rewind(agent_id, 3, token=token)
        assert store.rewind(agent_id, 1, token=token) == head  # the bare pointer moves back
        assert [b.length for b in store.list_branches(agent_id)] == [5, 1]
        assert store.rewind(agent_id, 1, token=token) == head  # to where it is: no change
        first = store.list_branches(agent_id)[0].id
        store.switch_branch(agent_id, first, token=token)  # leaving a bare pointer drops it
        assert [b.id for b in store.list_branches(agent_id)] == [first]

    def test_a_rewind_or_switch_is_refused_during_a_run_or_out_of_range(self, store: Store) -> None:
        agent_id, token = _conversation(store, 2)
        with pytest.raises(StoreError, match="2 messages"):
            store.rewind(agent_id, 3, token=token)
        with pytest.raises(LeaseLost):
            store.rewind(agent_id, 1, token="nobody")
        other, _ = _conversation(store, 1, "other")
        with pytest.raises(StoreError, match="no branch"):
            store.switch_branch(agent_id, store.list_branches(other)[0].id, token=token)
        with pytest.raises(StoreError, match="no branch"):
            store.load_messages(agent_id, branch_id=store.list_branches(other)[0].id)
        _start(store, agent_id, token, "m2", generation=2)
        with pytest.raises(StoreError, match="run is in progress"):
            store.rewind(agent_id, 1, token=token)

    def test_checkpoints_describe_each_committed_message(self, store: Store) -> None:
        agent_id, token = _spawn(store)
        before = time.time()
        _start(store, agent_id, token, "what is 2+2?", generation=1)
        store.commit_assistant(agent_id, Message.assistant(ContentBlock.tool_use("t1", "calc", {"x": 1})),
                               usage=Usage(), status=AgentStatus.streaming(), token=token)
        store.finish_run(agent_id, status=AgentStatus.finished(), token=token,
                         append=[Message.user(ContentBlock.tool_result("t1", "4"))])
        _start(store, agent_id, token, "thanks", generation=2)
        checkpoints = store.load_checkpoints(agent_id)
        assert [(c.index, c.role.value, c.preview, c.run_generation) for c in checkpoints] == [
            (0, "user", "what is 2+2?", 1), (1, "assistant", "→ calc", 1), (2, "user", "← 4", 1),
            (3, "user", "thanks", 2)]
        assert all(c.created_at >= before - 1 for c in checkpoints)
        assert [c.index for c in store.load_checkpoints(agent_id, 1, 3)] == [1, 2]

    def test_deleting_an_agent_keeps_the_messages_its_fork_reads(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        source, token = _conversation(store, 4)
        store.save_state(source, "k", {"v": 1}, token=token)
        team_mail.queue_mail(store, source, "alice", TeamMessage(sender="lead", content="hi"))
        fork, fork_token = _fork(store, source, 3)
        store.delete_agents([source], token=token)
        again = reopen()
        assert again.load_agent(source) is None
        assert again.lease_holder(source) is None
        assert again.load_state(source, "k") is None
        assert team_mail.list_mail(again, source) == []
        assert [r.id for r in again.list_agents("nb")] == [fork]
        assert _texts(again, fork) == ["m0", "m1", "m2"]
        store.delete_agents([fork], token=fork_token)
        assert store.list_agents("nb") == []
        assert store.load_messages(fork) == []

    def test_deleting_needs_the_agents_lease(self, store: Store) -> None:
        agent_id, _ = _conversation(store, 1)
        with pytest.raises(LeaseLost):
            store.delete_agents([agent_id], token="nobody")
        assert store.load_agent(agent_id) is not None
        store.delete_agents(["no-such-agent"], token="nobody")  # unknown ids are ignored

    def test_vacuum_keeps_everything_stored(self, store: Store, reopen: Callable[[], Store]) -> None:
        agent_id, _ = _conversation(store, 3)
        doomed, doomed_token = _conversation(store, 50, "doomed")
        store.delete_agents([doomed], token=doomed_token)
        store.vacuum()
        assert _texts(reopen(), agent_id) == ["m0", "m1", "m2"]
