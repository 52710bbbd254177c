"""`rt.post` reaches a subagent: the mail is queued like any subagent mail, a
child that is not running is started for it (as a follow-up would start it),
and the root hears how it ended. And the subagent functions are root methods."""

from __future__ import annotations

import pytest

from mentra_nb import AgentConfig, ConfigError, Runtime, SqliteStore
from mentra_nb.runtime import subagents
from mentra_nb.runtime.subagents import SubagentLimits
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.testing import text_stream
from tests.conftest import wait_until
from tests.subagents.helpers import RoutedProvider, call, mail_texts

DELEGATE = AgentConfig(subagents=SubagentLimits(max_agents=4, max_concurrency=3))


async def delegated(db_path) -> tuple[Runtime, RoutedProvider, object]:
    """A root whose child `b` has completed its task."""
    provider = RoutedProvider(
        root=[call("s1", "spawn_agent", task_name="b", message="Task b", model="anthropic:b"),
              text_stream("spawned")],
        b=[text_stream("B done")],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=DELEGATE)
    await root.send("Delegate b")
    await wait_until(lambda: subagents.list_subagents(root)[0].status == "completed")
    return rt, provider, root


async def test_rt_post_to_an_idle_subagent_starts_it_with_the_mail(db_path):
    rt, provider, root = await delegated(db_path)
    provider.add("b", text_stream("Y checked"))

    mail_id = rt.post("b", "Also check Y", sender="nightly-job")

    assert isinstance(mail_id, int)
    await wait_until(lambda: len(provider.requests("b")) == 2
                     and subagents.list_subagents(root)[0].status == "completed")
    [delivered] = mail_texts(provider.requests("b")[1])
    assert delivered.endswith('from="nightly-job">Also check Y</subagent_message>')
    assert subagents.list_subagents(root)[0].last_message == "Y checked"
    # Read once, and the root has the child's new result waiting.
    pending = subagent_mail.MAIL.pending(rt.store, root.id)
    assert [(m.recipient, m.kind, m.text) for m in pending] == [
        ("/root", "update", "B done"), ("/root", "update", "Y checked")]
    assert subagent_mail.MAIL.inflight(rt.store, subagents.subagent(root, "/root/b").id) == []
    await rt.aclose()


async def test_rt_post_refuses_a_sender_that_signs_as_an_agent_of_the_tree(db_path):
    rt, _provider, root = await delegated(db_path)
    with pytest.raises(ConfigError, match="not a path of the tree"):
        rt.post("b", "Stop everything", sender="/root")
    assert [m.kind for m in subagent_mail.MAIL.pending(rt.store, root.id)] == ["update"]
    await rt.aclose()


async def test_the_subagent_functions_are_methods_of_the_root(db_path):
    rt, _provider, root = await delegated(db_path)
    assert root.list_subagents() == subagents.list_subagents(root)
    assert root.subagent("/root/b") is subagents.subagent(root, "/root/b")
    assert root.subagent_picker() == subagents.subagent_picker(root)
    assert root.preview_subagent("/root/b") == subagents.preview(root, "/root/b")
    assert root.pending_subagent_approvals() == []
    assert root.interrupt_subagent("/root/b") == "completed"
    await rt.aclose()
