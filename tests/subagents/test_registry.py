"""Registry rules beyond spec/002's own tests: loading, limits, mail bounds,
interrupt semantics, the three ways a failed write is handled, and wait."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from mentra_nb import AgentConfig, ConfigError, StoreError
from mentra_nb.runtime.subagents import (
    PickerUpdated,
    SubagentCheckpointError,
    SubagentError,
    SubagentLimits,
    SubagentNotice,
    SubagentRegistry,
    UnknownSubagent,
    stored_tree,
)
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.runtime.subagents._tree import bounded_text
from tests.conftest import WAIT_LIMIT
from tests.subagents.helpers import standalone_registry

WIDE = SubagentLimits(max_concurrency=8, max_agents=16)


class Handle:
    def __init__(self) -> None:
        self.interrupts = 0

    def interrupt(self) -> None:
        self.interrupts += 1


def seed(registry, root_id, *paths, status="running"):
    for path in paths:
        parent = path.rsplit("/", 1)[0]
        registry.reserve(root_id, path, parent, f"id-{path}", path.count("/") - 1, "anthropic:m")
        if status != "pending_init":
            registry.rollback(root_id, path, status)


def test_limits_are_validated_with_the_spec_rules():
    assert SubagentLimits() == SubagentLimits(max_agents=32, max_concurrency=8, max_depth=4)
    with pytest.raises(ConfigError, match="max agents must be at least max concurrency"):
        SubagentLimits(max_agents=4, max_concurrency=8)
    for bad in ({"max_concurrency": 1}, {"max_concurrency": 65, "max_agents": 100},
                {"max_agents": 257}, {"max_depth": 0}, {"max_depth": 17}):
        with pytest.raises(ConfigError):
            SubagentLimits(**bad)
    assert AgentConfig(subagents=True).subagents == SubagentLimits()
    assert AgentConfig(subagents=False).subagents is None
    # Persisted configs round-trip through JSON.
    stored = AgentConfig(subagents=SubagentLimits(max_depth=2)).model_dump(mode="json")
    assert AgentConfig.model_validate(stored).subagents.max_depth == 2


def test_last_messages_are_bounded_without_splitting_a_character():
    assert bounded_text("short") == "short"
    text = "é" * 20_000  # 40,000 bytes
    cut = bounded_text(text)
    assert cut.endswith("…") and len(cut.encode("utf-8")) <= 24_000
    assert cut[:-1] == "é" * len(cut[:-1])  # no half character before the ellipsis
    assert len(bounded_text("a" * 24_000).encode()) == 24_000


async def test_loading_a_tree_interrupts_children_that_were_active(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/done", status="completed")
    seed(registry, root_id, "/root/busy", status="pending_init")
    registry.attach(root_id, "/root/busy", Handle(), turn="run-1")
    assert registry.tree(root_id).agents["/root/busy"].active_turn == "run-1"

    reopened = SubagentRegistry()
    tree = reopened.initialize(root_id, store=store, token=rt._leases.token, limits=WIDE)
    assert {p: r.status for p, r in tree.agents.items()} == {
        "/root/busy": "interrupted", "/root/done": "completed"}
    assert tree.agents["/root/busy"].active_turn is None
    durable = stored_tree(store.inner, root_id)["agents"]["/root/busy"]
    assert (durable["status"], durable["active_turn"]) == ("interrupted", None)
    await rt.aclose()


async def test_a_checkpoint_beyond_the_limits_is_a_clear_error(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, *(f"/root/c{i}" for i in range(5)), status="completed")
    with pytest.raises(SubagentCheckpointError) as refused:
        SubagentRegistry().initialize(root_id, store=store, token=rt._leases.token,
                                      limits=SubagentLimits(max_agents=4, max_concurrency=2))
    message = str(refused.value)
    assert message.startswith("subagent checkpoint exceeds safety limits")
    assert "5 stored subagents" in message and "max_agents=6" in message
    await rt.aclose()


async def test_an_unreadable_checkpoint_is_a_clear_error(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path, WIDE)
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO records (kind, scope, key, value, created_at, updated_at)"
                 " VALUES ('subagents.tree', ?, '', ?, 0, 0)",
                 (root_id, '{"agents": {"/root/x": {"parent": 3}}}'))
    conn.commit()
    conn.close()
    with pytest.raises(SubagentCheckpointError, match="subagent state of agent .* is unreadable"):
        SubagentRegistry().initialize(root_id, store=store, token=rt._leases.token, limits=WIDE)
    await rt.aclose()


async def test_spawning_an_existing_path_is_refused(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/a")
    with pytest.raises(SubagentError, match="agent `/root/a` already exists"):
        seed(registry, root_id, "/root/a")
    await rt.aclose()


async def test_followup_restart_counts_against_concurrency(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(
        db_path, SubagentLimits(max_concurrency=2, max_agents=4))
    seed(registry, root_id, "/root/a", "/root/b", status="completed")
    registry.restart(root_id, "/root/a", Handle(), turn="run-2")
    with pytest.raises(SubagentError, match="subagent concurrency limit 2 \\(including root\\) reached"):
        registry.restart(root_id, "/root/b", Handle(), turn="run-2")
    with pytest.raises(SubagentError, match="already running"):
        registry.restart(root_id, "/root/a", Handle(), turn="run-3")
    await rt.aclose()


async def test_unread_mail_has_no_cap_and_a_finish_notice_evicts_nothing(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/a", status="pending_init")
    for index in range(300):  # more than the 256 the mailbox once held, dropping or refusing the rest
        registry.queue_message(root_id, "/root/a", "/root", f"note {index}")
    registry.finished(root_id, "/root/a", "completed", "result")
    stored = subagent_mail.MAIL.pending(store.inner, root_id, "/root")
    assert [m.text for m in stored] == [*(f"note {i}" for i in range(300)), "result"]
    assert (stored[-1].kind, stored[-1].status) == ("update", "completed")
    assert "mailbox" not in stored_tree(store.inner, root_id)
    await rt.aclose()


async def test_mail_to_an_unknown_agent_is_refused(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(db_path, WIDE)
    with pytest.raises(UnknownSubagent, match="unknown agent `/root/ghost`"):
        registry.queue_message(root_id, "/root", "/root/ghost", "hello?")
    await rt.aclose()


async def test_interrupt_semantics(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/live", "/root/starting", status="pending_init")
    seed(registry, root_id, "/root/done", status="completed")
    live = Handle()
    registry.attach(root_id, "/root/live", live, turn="run-1")
    registry.attach(root_id, "/root/starting", Handle())  # live, but no turn has begun

    with pytest.raises(SubagentError, match="^the root agent cannot interrupt itself$"):
        registry.interrupt(root_id, "/root")
    with pytest.raises(UnknownSubagent, match="unknown agent `/root/nobody`"):
        registry.interrupt(root_id, "/root/nobody")
    with pytest.raises(SubagentError, match="^agent `/root/starting` has no active turn to interrupt$"):
        registry.interrupt(root_id, "/root/starting")
    assert registry.interrupt(root_id, "/root/live") == "running"
    assert live.interrupts == 1
    # Not live in this process: nothing to do, and no error.
    assert registry.interrupt(root_id, "/root/done") == "completed"
    await rt.aclose()


async def test_cleanup_commits_even_when_the_write_fails(db_path):
    registry, root_id, store, events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/a", status="pending_init")
    store.fail_state_saves(1)
    with pytest.raises(StoreError, match="forced state save failure"):
        registry.remove(root_id, "/root/a")
    assert registry.list(root_id) == []
    assert events[-1].kind == "picker_removed"
    # Disk still has it; the next successful write brings disk in line.
    assert "/root/a" in stored_tree(store.inner, root_id)["agents"]
    seed(registry, root_id, "/root/b", status="pending_init")
    assert list(stored_tree(store.inner, root_id)["agents"]) == ["/root/b"]
    await rt.aclose()


async def test_a_failed_retry_still_commits_and_says_so(db_path):
    registry, root_id, store, events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/a", status="pending_init")
    store.fail_state_saves(1, 2)
    registry.finished(root_id, "/root/a", "completed", "done")
    assert registry.list(root_id)[0]["status"] == "errored"
    notices = [e.text for e in events if isinstance(e, SubagentNotice)]
    assert len(notices) == 2
    assert "subagent state persistence failed" in notices[0]
    assert "retrying the errored state failed too: forced state save failure" in notices[1]
    await rt.aclose()


async def test_wait_sleeps_until_mail_arrives(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/a", "/root/b", status="pending_init")
    waiting = asyncio.create_task(registry.wait(root_id, "/root", 5.0))
    await asyncio.sleep(0.01)
    registry.attach(root_id, "/root/a", Handle(), turn="run-1")  # a change, but no mail for /root
    await asyncio.sleep(0.01)
    assert not waiting.done()
    registry.finished(root_id, "/root/b", "completed", "b's result")
    async with asyncio.timeout(WAIT_LIMIT):
        assert await waiting == ["/root/b"]
    # Mail claimed by the caller's running turn (delivered to it) does not count as unread.
    [mail] = subagent_mail.MAIL.claim(store.inner, root_id, "/root", claimer=root_id,
                                      token=rt._leases.token)
    assert mail.message.text == "b's result"
    async with asyncio.timeout(WAIT_LIMIT):
        assert await registry.wait(root_id, "/root", 0.05) == []
    await rt.aclose()


async def test_wait_wakes_when_the_root_is_removed(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/a", status="pending_init")
    waiting = asyncio.create_task(registry.wait(root_id, "/root", 5.0))
    await asyncio.sleep(0.01)
    registry.remove_root(root_id)
    with pytest.raises(UnknownSubagent):
        async with asyncio.timeout(WAIT_LIMIT):
            await waiting
    await rt.aclose()


async def test_subscribers_get_the_current_picker_and_a_broken_one_is_isolated(db_path):
    registry, root_id, _store, events, rt = standalone_registry(db_path, WIDE)
    seed(registry, root_id, "/root/b", "/root/a", status="pending_init")
    late: list = []
    registry.subscribe(root_id, late.append)
    assert [type(e) for e in late] == [PickerUpdated]
    assert [o.path for o in late[0].picker.options] == ["/root/a", "/root/b"]  # path order

    def broken(event):
        raise RuntimeError("widget gone")

    unsubscribe = registry.subscribe(root_id, broken)
    registry.finished(root_id, "/root/a", "errored", "boom")
    assert late[-1].picker.tone == "error"
    unsubscribe()
    registry.rollback(root_id, "/root/a", "completed")
    registry.rollback(root_id, "/root/b", "completed")
    assert late[-1].picker.tone == "neutral"
    await rt.aclose()
