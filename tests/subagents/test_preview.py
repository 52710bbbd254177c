"""The picker's transcript preview: one turn per page, newest first, read
from the store while the agents keep running."""

from __future__ import annotations

import asyncio

import pytest

from mentra_nb import AgentConfig, Runtime, SqliteStore, StreamError
from mentra_nb.runtime.subagents import (
    InvalidPreviewCursor,
    UnknownSubagent,
    list_subagents,
    preview,
)
from mentra_nb.testing import controlled_stream, error_stream, text_stream
from tests.conftest import wait_until
from tests.subagents.helpers import RoutedProvider, run_tool, start_text


@pytest.fixture
async def env(db_path):
    provider = RoutedProvider()
    rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider])
    root = rt.spawn("lead", "anthropic:root", config=AgentConfig(subagents=True))
    yield rt, root, provider
    await rt.aclose()


async def settle(root, path: str) -> None:
    await wait_until(lambda: next(i for i in list_subagents(root) if i.path == path).status
                     not in ("pending_init", "running"))


async def three_turn_child(root, provider) -> None:
    """A child with three turns; mail delivered into the last one."""
    provider.add("c", text_stream("answer 1"), text_stream("answer 2"), text_stream("answer 3"))
    await run_tool(root, "spawn_agent", task_name="c", message="task 1", model="anthropic:c")
    await settle(root, "/root/c")
    await run_tool(root, "followup_task", target="c", message="task 2")
    await settle(root, "/root/c")
    await run_tool(root, "send_message", target="c", message="a private note")
    await run_tool(root, "followup_task", target="c", message="task 3")
    await settle(root, "/root/c")


async def test_pages_are_turns_newest_first_with_a_cursor_to_the_older_one(env):
    rt, root, provider = env
    await three_turn_child(root, provider)

    latest = preview(root, "/root/c")
    assert [m.text for m in latest.messages] == ["task 3", "answer 3"]  # the mail is hidden
    assert (latest.status, latest.model, latest.error) == ("completed", "anthropic:c", None)
    middle = preview(root, "/root/c", before=latest.older)
    assert [m.text for m in middle.messages] == ["task 2", "answer 2"]
    first = preview(root, "/root/c", before=middle.older)
    assert [m.text for m in first.messages] == ["task 1", "answer 1"]
    assert first.older is None and not first.has_older
    # The store really holds the delivered mail; only the preview hides it.
    stored = rt.store.load_agent(list_subagents(root)[0].agent_id).transcript
    assert any("a private note" in m.text for m in stored)


@pytest.mark.parametrize("cursor", ["garbage", "older:0", "older:-1", "older:", "", "older:1x"])
async def test_a_malformed_cursor_is_refused(env, cursor):
    _rt, root, provider = env
    await three_turn_child(root, provider)
    with pytest.raises(InvalidPreviewCursor, match="^invalid subagent preview cursor"):
        preview(root, "/root/c", before=cursor)


async def test_unknown_paths_are_refused(env):
    _rt, root, _provider = env
    with pytest.raises(UnknownSubagent, match="unknown agent `/root/nobody`"):
        preview(root, "/root/nobody")


async def test_an_errored_childs_latest_page_ends_with_its_error(env):
    _rt, root, provider = env
    provider.add("e", error_stream([], StreamError("the model hung up")))
    await run_tool(root, "spawn_agent", task_name="e", message="try", model="anthropic:e")
    await settle(root, "/root/e")
    page = preview(root, "/root/e")
    assert (page.status, page.error) == ("errored", "the model hung up")
    # A failed run is rolled back; the page still shows what is stored (nothing).
    assert page.messages == [] and page.older is None


async def running_child(root, provider, name: str, task: str, text: str):
    """A child `name` working on `task` that has streamed `text`; returns its stream's control."""
    script, control = controlled_stream()
    provider.add(name, script)
    await run_tool(root, "spawn_agent", task_name=name, message=task, model=f"anthropic:{name}")
    await wait_until(lambda: provider.requests(name))
    start_text(control, text)
    return control


async def test_an_interrupted_childs_latest_page_has_its_rolled_back_prompt_and_status(env):
    _rt, root, provider = env
    await running_child(root, provider, "i", "count the stars", "1, 2, 3")
    await run_tool(root, "interrupt_agent", target="i")
    await settle(root, "/root/i")
    page = preview(root, "/root/i")
    assert (page.status, page.messages) == ("interrupted", [])  # rolled back out of the transcript
    assert page.rolled_back is not None and page.rolled_back.text == "count the stars"
    assert page.interrupted == "interrupted: its turn was stopped and rolled back; followup_task restarts it"
    assert page.error is None


async def test_preview_works_while_the_root_is_running_and_from_another_thread(env):
    _rt, root, provider = env
    await three_turn_child(root, provider)
    root_stream, root_control = controlled_stream()
    provider.add("root", root_stream)
    sending = asyncio.create_task(root.send("keep going"))
    start_text(root_control, "thinking…")
    await wait_until(lambda: root.snapshot.current_text == "thinking…")

    page = await asyncio.to_thread(preview, root, "/root/c")  # e.g. a widget's comm thread
    assert [m.text for m in page.messages] == ["task 3", "answer 3"]
    assert root.is_running
    sending.cancel()
    await asyncio.gather(sending, return_exceptions=True)


async def test_a_running_childs_preview_shows_its_committed_messages(env):
    _rt, root, provider = env
    control = await running_child(root, provider, "r", "long task", "partial")
    page = preview(root, "/root/r")
    assert (page.status, [m.text for m in page.messages]) == ("running", ["long task"])
    control.close()


async def test_a_turn_bigger_than_a_page_is_split_and_nothing_is_lost(env):
    _rt, root, provider = env
    chunk = "x" * 3_000
    provider.add("big", text_stream(chunk + "A"))
    await run_tool(root, "spawn_agent", task_name="big", message="first " + chunk,
                   model="anthropic:big")
    await settle(root, "/root/big")
    provider.add("big", text_stream(chunk + "B"))
    await run_tool(root, "followup_task", target="big", message="second " + chunk)
    await settle(root, "/root/big")

    seen, pages, cursor = [], 0, None
    while True:
        page = preview(root, "/root/big", before=cursor, max_bytes=5_000)
        assert sum(len(m.model_dump_json()) for m in page.messages) <= 5_000
        seen = [m.text[:6] for m in page.messages] + seen
        pages += 1
        cursor = page.older
        if cursor is None:
            break
    assert seen == ["first ", "xxxxxx", "second", "xxxxxx"]
    assert pages == 4


async def test_a_single_message_bigger_than_a_page_is_shortened(env):
    _rt, root, provider = env
    provider.add("huge", text_stream("y" * 50_000))
    await run_tool(root, "spawn_agent", task_name="huge", message="go", model="anthropic:huge")
    await settle(root, "/root/huge")
    page = preview(root, "/root/huge", max_bytes=10_000)
    assert page.truncated
    [reply] = page.messages
    assert reply.text.endswith("…") and len(reply.text.encode()) < 10_000
    assert [m.text for m in preview(root, "/root/huge", before=page.older).messages] == ["go"]
