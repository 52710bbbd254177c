"""A child's tool call that needs the user's approval: seen by the root, its
picker and `list_agents`, announced to the parent (ending its `wait_agent`),
answered from the root's side, or refused at once under `approvals="deny"`."""

from __future__ import annotations

import asyncio
import json

from mentra_nb import AgentConfig, AgentStatus, Runtime, SqliteStore
from mentra_nb.runtime.subagents import (
    HEADLESS_REFUSAL,
    SubagentLimits,
    approve_call,
    list_subagents,
    pending_approvals,
    subagent,
    subagent_picker,
)
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.testing import controlled_stream, text_stream
from tests.conftest import WAIT_LIMIT, wait_until
from tests.subagents.helpers import RoutedProvider, call, mail_texts, run_tool, tool_results


def delegating(approvals: str = "ask") -> AgentConfig:
    return AgentConfig(subagents=SubagentLimits(max_agents=4, max_concurrency=3, approvals=approvals))


def writer_tree(tmp_path, root_steps):
    """A root that spawns `/root/writer`, whose model calls write_file (which needs
    approval) when the test calls `release()`, so the test decides what the root has
    done by then."""
    held, control = controlled_stream()
    provider = RoutedProvider(
        root=[call("s1", "spawn_agent", task_name="writer", message="Write out.txt",
                   model="anthropic:child"), *root_steps],
        child=[held, text_stream("wrote out.txt")],
    )
    # The built-in file tools, confined to tmp_path: write_file asks for approval.
    rt = Runtime(store=SqliteStore(tmp_path / "state.sqlite"), providers=[provider], workspace=tmp_path)

    def release() -> None:
        for event in call("c1", "write_file", path="out.txt", content="hello").events:
            control.send(event)

    return rt, provider, release


async def test_a_child_waiting_for_approval_is_reported_and_answered_from_the_root(tmp_path):
    rt, provider, release = writer_tree(tmp_path, [call("w1", "wait_agent"), call("w2", "wait_agent"),
                                                   text_stream("the writer is done")])
    root = rt.spawn("lead", "anthropic:root", config=delegating())
    sending = asyncio.create_task(root.send("Get out.txt written"))
    await wait_until(lambda: len(provider.requests("root")) == 2)  # the root is about to wait
    release()

    # The child pauses on its write; the root's wait_agent returns for it, it does not time out.
    await wait_until(lambda: len(provider.requests("root")) >= 3)
    assert json.loads(tool_results(provider.requests("root")[2])["w1"]) == ["/root/writer"]
    [notice] = mail_texts(provider.requests("root")[2])
    assert notice.startswith("<subagent_approval ")
    assert 'agent="/root/writer" tool="write_file"' in notice

    # Everything the root side shows says what the child waits for.
    [info] = list_subagents(root)
    assert (info.status, info.waiting_for_approval) == ("running", ["write_file"])
    assert root.snapshot.subagents[0].waiting_for_approval == ["write_file"]
    picker = subagent_picker(root)
    assert picker is not None and picker.options[0].waiting_for_approval == ["write_file"]
    [listed] = json.loads(await run_tool(root, "list_agents"))
    assert listed["waiting_for_approval"] == ["write_file"]
    [(path, waiting)] = pending_approvals(root)
    assert (path, waiting.tool_name, waiting.input) == (
        "/root/writer", "write_file", {"path": "out.txt", "content": "hello"})
    assert not (tmp_path / "out.txt").exists()

    approve_call(root, path, waiting.reference)
    reply = await asyncio.wait_for(sending, WAIT_LIMIT)

    assert reply.text == "the writer is done"
    assert (tmp_path / "out.txt").read_text() == "hello"
    # The second wait_agent returned with the child's result, not with a stale approval notice.
    last = provider.requests("root")[3]
    assert json.loads(tool_results(last)["w2"]) == ["/root/writer"]
    assert mail_texts(last)[-1].endswith('status="completed">wrote out.txt</subagent_update>')
    [info] = list_subagents(root)
    assert (info.status, info.waiting_for_approval, info.last_message) == (
        "completed", [], "wrote out.txt")
    assert pending_approvals(root) == []
    await rt.aclose()


async def test_an_approval_answered_before_the_parent_reads_leaves_no_stale_notice(tmp_path):
    rt, provider, release = writer_tree(tmp_path, [text_stream("spawned it")])
    root = rt.spawn("lead", "anthropic:root", config=delegating())
    await root.send("Get out.txt written")  # the root's turn ends; nobody reads its mail yet
    release()
    await wait_until(lambda: pending_approvals(root) != [])
    assert [m.kind for m in subagent_mail.MAIL.pending(rt.store, root.id)] == ["approval"]

    [(path, waiting)] = pending_approvals(root)
    approve_call(root, path, waiting.reference)
    await wait_until(lambda: list_subagents(root)[0].status == "completed")

    # Only the result is left for the root: the notice of the answered call was withdrawn.
    mailbox = subagent_mail.MAIL.pending(rt.store, root.id)
    assert [(m.kind, m.status) for m in mailbox] == [("update", "completed")]
    await rt.aclose()


async def test_approvals_deny_refuses_a_childs_call_at_once(tmp_path):
    rt, provider, release = writer_tree(tmp_path, [call("w1", "wait_agent"), text_stream("done")])
    root = rt.spawn("lead", "anthropic:root", config=delegating("deny"))

    sending = asyncio.create_task(root.send("Get out.txt written"))
    await wait_until(lambda: provider.requests("child"))
    release()
    reply = await asyncio.wait_for(sending, WAIT_LIMIT)

    assert reply.text == "done"
    result = provider.requests("child")[1].messages[-1].tool_results[0]
    assert result.is_error
    assert result.content.startswith(f"{HEADLESS_REFUSAL}: 'write_file' needs the user's approval")
    assert not (tmp_path / "out.txt").exists()
    child = subagent(root, "/root/writer")
    assert child is not None and child.status == AgentStatus.finished()
    assert list_subagents(root)[0].status == "completed"
    # The root itself still asks: the policy is for the headless children.
    assert "write_file" in [t.spec.name for t in root.tools()]
    await rt.aclose()
