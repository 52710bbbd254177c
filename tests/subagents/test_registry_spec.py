"""The registry tests of spec/002 (the agent gateway's subagent registry), ported.

Each runs against a real SQLite file; `FaultyStore` fails chosen state writes
the way the spec's FailOnceStore and BlockingRetryStore do.
"""

from __future__ import annotations

import asyncio

import pytest

from mentra_nb.runtime.subagents import (
    PickerRemoved,
    PickerUpdated,
    SubagentLimitReached,
    SubagentLimits,
    SubagentNotice,
    SubagentRecord,
    SubagentTree,
    UnknownSubagent,
    stored_tree,
)
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.runtime.subagents._mailbox import render_mail
from mentra_nb.runtime.subagents._picker import picker_for
from tests.conftest import WAIT_LIMIT
from tests.subagents.helpers import standalone_registry


def reserve(registry, root_id, path="/root/child", model="test"):
    registry.reserve(root_id, path, "/root", f"agent-{path.rsplit('/', 1)[-1]}", 1, model)


def test_status_widget_owns_its_picker():
    tree = SubagentTree(agents={
        "/root/reviewer": SubagentRecord(parent="/root", agent_id="child-1", depth=1,
                                         model="openai:gpt-5", status="running"),
    })
    picker = picker_for(tree)
    assert picker is not None
    assert (picker.symbol, picker.text, picker.count, picker.title) == ("agent", "1", 1, "Subagents")
    [option] = picker.options
    assert (option.label, option.status, option.model, option.path) == (
        "reviewer", "running", "openai:gpt-5", "/root/reviewer")


async def test_failed_persist_does_not_mutate_runtime_state(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path)
    store.fail_state_saves(1)
    with pytest.raises(Exception, match="forced state save failure"):
        reserve(registry, root_id)
    after_failure = len(registry.list(root_id))
    reserve(registry, root_id)
    after_retry = len(registry.list(root_id))
    assert (after_failure, after_retry) == (0, 1)
    assert list(stored_tree(store.inner, root_id)["agents"]) == ["/root/child"]
    await rt.aclose()


async def test_empty_initial_tree_is_silent_and_empty_transition_removes_widget(db_path):
    registry, root_id, _store, events, rt = standalone_registry(db_path)
    assert events == []
    reserve(registry, root_id)
    registry.remove(root_id, "/root/child")
    assert [type(e) for e in events] == [PickerUpdated, PickerRemoved]
    assert events[0].root_id == root_id and events[0].picker.count == 1
    await rt.aclose()


async def test_wait_returns_immediately_without_an_active_peer(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(db_path)
    reserve(registry, root_id)
    registry.rollback(root_id, "/root/child", "completed")
    # "wait should not sleep without active peers": a wait that slept would take 60 s.
    async with asyncio.timeout(WAIT_LIMIT):
        updates = await registry.wait(root_id, "/root", 60.0)
    assert updates == []
    await rt.aclose()


async def test_reserve_enforces_configured_concurrency_including_root(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(
        db_path, SubagentLimits(max_concurrency=3, max_agents=4))
    for index in range(2):
        reserve(registry, root_id, f"/root/child_{index}")
    with pytest.raises(SubagentLimitReached) as refused:
        reserve(registry, root_id, "/root/overflow")
    assert str(refused.value) == "subagent concurrency limit 3 (including root) reached"
    await rt.aclose()


async def test_reserve_enforces_configured_agent_limit_including_root(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(
        db_path, SubagentLimits(max_concurrency=2, max_agents=3))
    for index in range(2):
        path = f"/root/child_{index}"
        reserve(registry, root_id, path)
        registry.rollback(root_id, path, "completed")
    with pytest.raises(SubagentLimitReached) as refused:
        reserve(registry, root_id, "/root/overflow")
    assert str(refused.value) == "subagent limit 3 (including root) reached"
    await rt.aclose()


async def test_mail_is_retained_until_its_checkpoint_marker_is_acknowledged(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path)
    token = rt._leases.token
    registry.queue_message(root_id, "/root/child", "/root", "done")
    [mail] = subagent_mail.MAIL.claim(store.inner, root_id, "/root", claimer=root_id, token=token)
    assert mail.message.text == "done"
    # A run that did not keep its marker gives it back.
    subagent_mail.MAIL.settle(store.inner, root_id, token=token, delivered=lambda claimed: subagent_mail.held_in([], claimed))
    assert [m.id for m in registry.pending_mail(root_id, "/root")] == [mail.message.id]
    # A run whose transcript holds the marker has read it: it is gone for good.
    [again] = subagent_mail.MAIL.claim(store.inner, root_id, "/root", claimer=root_id, token=token)
    subagent_mail.MAIL.settle(store.inner, root_id, token=token,
                              delivered=lambda claimed: subagent_mail.held_in([render_mail(again.message)], claimed))
    assert registry.pending_mail(root_id, "/root") == []
    assert subagent_mail.MAIL.inflight(store.inner, root_id) == []
    await rt.aclose()


async def test_remove_root_evicts_runtime_state(db_path):
    registry, root_id, _store, _events, rt = standalone_registry(db_path)
    registry.remove_root(root_id)
    with pytest.raises(UnknownSubagent, match=f"unknown agent tree `{root_id}`"):
        registry.tree(root_id)
    await rt.aclose()


async def test_terminal_persist_failure_is_retried_as_a_durable_error(db_path):
    registry, root_id, store, events, rt = standalone_registry(db_path)
    reserve(registry, root_id)
    store.fail_state_saves(1)
    registry.finished(root_id, "/root/child", "completed", "done")

    [agent] = registry.list(root_id)
    updates = await registry.wait(root_id, "/root", 0)
    durable = stored_tree(store.inner, root_id)
    rendered_error = any(isinstance(e, SubagentNotice) and "state persistence failed" in e.text
                         for e in events)
    assert agent["status"] == "errored"
    assert "subagent state persistence failed: forced state save failure" in agent["last_message"]
    assert durable["agents"]["/root/child"]["status"] == "errored"
    assert rendered_error
    assert updates == ["/root/child"]
    # The parent's notice tells the same story as the tree.
    [notice] = registry.pending_mail(root_id, "/root")
    assert (notice.status, notice.kind) == ("errored", "update")
    await rt.aclose()


async def test_terminal_persist_failure_notifies_after_the_retry_commits(db_path):
    registry, root_id, store, _events, rt = standalone_registry(db_path)
    reserve(registry, root_id)
    before_commit = registry.next_change()
    seen_during_retry = []

    def during_write(number: int) -> None:
        if number == store.state_saves and number == retry_number:
            # The retry is being written: nobody may have been woken yet, and
            # readers still see the state that is on disk.
            seen_during_retry.append((before_commit.done(), registry.list(root_id)[0]["status"]))

    retry_number = store.state_saves + 2
    store.fail_state_saves(1)
    store.before_state_save = during_write
    registry.finished(root_id, "/root/child", "completed", "done")

    assert seen_during_retry == [(False, "pending_init")]
    async with asyncio.timeout(WAIT_LIMIT):  # "terminal commit notification"
        await before_commit
    await rt.aclose()
