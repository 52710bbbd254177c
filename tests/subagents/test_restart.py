"""A kernel restart: a second Runtime opens the same SQLite file while the
first one is frozen mid-flight (as spec/000's resume tests simulate a crash),
and the subagent tree comes back with its children interrupted and its mail
intact."""

from __future__ import annotations

import asyncio
import json

from mentra_nb import AgentConfig, AgentStatus, Message, Runtime, SqliteStore, tool
from mentra_nb.runtime.subagents import (
    list_subagents,
    preview,
    stored_tree,
    subagent,
    subagent_picker,
)
from mentra_nb.runtime.subagents import mail as subagent_mail
from mentra_nb.testing import controlled_stream, text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT, clear_leases, wait_until
from tests.subagents.helpers import (
    RoutedProvider,
    call,
    mail_texts,
    start_text,
    tool_results,
)


def spawn(tool_id: str, task: str, model: str) -> tuple[str, str, str]:
    return (tool_id, "spawn_agent",
            json.dumps({"task_name": task, "message": f"Task {task}", "model": f"anthropic:{model}"}))


async def first_life(db_path, root_steps=(), **child_scripts):
    """Runtime 1: the root spawns a (left streaming) and b (finishes)."""
    script_a, control_a = controlled_stream()
    provider = RoutedProvider(
        root=[tool_use_stream(*spawn("s1", "a", "a"), calls=[spawn("s2", "b", "b")]),
              text_stream("spawned two"), *root_steps],
        a=[script_a], b=[text_stream("B done")], **child_scripts,
    )
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True))
    await root.send("Do a and b")
    await wait_until(lambda: provider.requests("a"))
    start_text(control_a, "half of A")
    await wait_until(lambda: subagent(root, "/root/a").snapshot.current_text == "half of A")
    await wait_until(lambda: list_subagents(root)[1].status == "completed")
    return rt, root, provider


async def test_restart_interrupts_running_children_and_followup_revives_them(db_path):
    rt1, root1, _ = await first_life(db_path)
    # The kernel dies here: runtime 1 never runs again.
    clear_leases(db_path)
    provider = RoutedProvider(
        root=[call("f", "followup_task", target="a", message="Finish A now"),
              call("w", "wait_agent"), text_stream("all done")],
        a=[text_stream("A done")],
    )
    rt2 = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    [root] = rt2.resume()
    assert root.id == root1.id

    infos = {i.path: i for i in list_subagents(root)}
    assert {p: i.status for p, i in infos.items()} == {"/root/a": "interrupted", "/root/b": "completed"}
    assert infos["/root/a"].active_turn is None
    durable = stored_tree(rt2.store, root.id)
    assert durable["agents"]["/root/a"]["status"] == "interrupted"
    assert [(o.label, o.status) for o in subagent_picker(root).options] == [
        ("a", "interrupted"), ("b", "completed")]
    assert [s.status for s in root.snapshot.subagents] == ["interrupted", "completed"]
    # Children are not loaded by resume; their transcripts are readable anyway.
    assert subagent(root, "/root/a") is None
    assert [m.text for m in preview(root, "/root/a").messages] == ["Task a"]
    assert [m.text for m in preview(root, "/root/b").messages] == ["Task b", "B done"]

    reply = await asyncio.wait_for(root.send("Continue"), WAIT_LIMIT)
    assert reply.text == "all done"
    first = provider.requests("root")[0]
    # b's notice was stored before the restart and is delivered now.
    assert [t.split('status="')[1].split('"')[0] for t in mail_texts(first)] == ["completed"]
    assert json.loads(tool_results(provider.requests("root")[2])["w"]) == ["/root/a"]
    # The interrupted run was rolled back by recovery; its task comes first again.
    assert provider.requests("a")[0].messages == [Message.user("Task a"), Message.user("Finish A now")]
    assert {i.path: i.status for i in list_subagents(root)} == {
        "/root/a": "completed", "/root/b": "completed"}
    assert subagent_mail.MAIL.pending(rt2.store, root.id) == []
    assert subagent_mail.MAIL.inflight(rt2.store, root.id) == []

    # The frozen first runtime, shut down at last, must not touch the new state.
    settled = stored_tree(rt2.store, root.id)
    await rt1.aclose()
    assert stored_tree(rt2.store, root.id) == settled
    await rt2.aclose()


async def test_mail_delivered_into_a_run_lost_in_a_crash_is_delivered_again(db_path):
    root_stream, root_control = controlled_stream()
    rt1, root1, provider1 = await first_life(db_path, root_steps=[root_stream])
    [notice] = subagent_mail.MAIL.pending(rt1.store, root1.id)
    sending = asyncio.create_task(root1.send("Anything new?"))
    await wait_until(lambda: root1.status == AgentStatus.streaming())
    start_text(root_control, "Let me th")  # the root is mid-stream, mail injected, then: crash
    await wait_until(lambda: root1.snapshot.current_text == "Let me th")
    assert f'id="{notice.id}"' in mail_texts(provider1.requests("root")[-1])[0]

    clear_leases(db_path)
    provider = RoutedProvider(root=[text_stream("b is done")])
    rt2 = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    [root] = rt2.resume()
    # Claimed by the lost run, it is pending again once the root is loaded.
    assert [m.id for m in subagent_mail.MAIL.pending(rt2.store, root.id)] == [notice.id]
    await root.resume()  # replays "Anything new?"
    [redelivered] = mail_texts(provider.requests("root")[0])
    assert f'id="{notice.id}"' in redelivered
    assert subagent_mail.MAIL.pending(rt2.store, root.id) == []
    assert subagent_mail.MAIL.inflight(rt2.store, root.id) == []

    sending.cancel()
    await asyncio.gather(sending, return_exceptions=True)
    await rt1.aclose()
    await rt2.aclose()


async def test_mail_whose_marker_survived_a_crash_is_not_delivered_twice(db_path):
    started = asyncio.Event()

    @tool
    async def slow_lookup() -> str:
        """Takes forever."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    rt1, root1, provider1 = await first_life(
        db_path, root_steps=[call("t", "slow_lookup"), text_stream("unused")])
    rt1.register_tool(slow_lookup)
    sending = asyncio.create_task(root1.send("Anything new?"))
    await asyncio.wait_for(started.wait(), WAIT_LIMIT)  # mail injected, assistant committed, tool running
    assert len(mail_texts(provider1.requests("root")[-1])) == 1

    clear_leases(db_path)
    provider = RoutedProvider(root=[text_stream("b is done")])
    rt2 = Runtime.empty(store=SqliteStore(db_path), providers=[provider], tools=[slow_lookup])
    [root] = rt2.resume()
    await root.resume()  # continues after the interrupted tool call
    # The transcript kept the delivery, so the model sees it once, not twice.
    assert len(mail_texts(provider.requests("root")[0])) == 1
    assert subagent_mail.MAIL.pending(rt2.store, root.id) == []
    assert subagent_mail.MAIL.inflight(rt2.store, root.id) == []

    sending.cancel()
    await asyncio.gather(sending, return_exceptions=True)
    await rt1.aclose()
    await rt2.aclose()
