"""The subagent tree across a real process boundary: the process driving a
root and its children is SIGKILLed, and this process resumes the tree."""

from __future__ import annotations

import asyncio

import pytest

from mentra_nb import Message, Runtime, SqliteStore
from mentra_nb.runtime.subagents import list_subagents, preview, stored_tree
from mentra_nb.testing import text_stream
from tests.children import Child, integrity
from tests.conftest import WAIT_LIMIT
from tests.subagents.helpers import RoutedProvider, call, mail_texts

pytestmark = pytest.mark.process


@pytest.fixture
def killed_tree(db_path, children) -> str:
    """Run tests/subagents/crash_tree.py until it is ready, SIGKILL it; the root's id."""
    process = Child("tests.subagents.crash_tree", str(db_path))
    children.append(process)
    [root_id] = process.ready()
    process.kill()
    return root_id


async def test_killed_process_leaves_children_interrupted_and_a_followup_revives_them(
    db_path, killed_tree
):
    root_id = killed_tree
    assert integrity(db_path) == "ok"
    before = stored_tree(SqliteStore(db_path), root_id)
    assert {p: a["status"] for p, a in before["agents"].items()} == {
        "/root/a": "running", "/root/b": "completed"}

    provider = RoutedProvider(
        root=[call("f", "followup_task", target="a", message="Finish A"),
              call("w", "wait_agent"), text_stream("all done")],
        a=[text_stream("A done")],
    )
    rt = Runtime.empty(store=SqliteStore(db_path), runtime_id="crash-tree", providers=[provider])
    [root] = rt.resume()  # the dead process's leases are taken over
    assert root.id == root_id
    assert {i.path: i.status for i in list_subagents(root)} == {
        "/root/a": "interrupted", "/root/b": "completed"}
    assert stored_tree(rt.store, root_id)["agents"]["/root/a"]["status"] == "interrupted"
    assert [m.text for m in preview(root, "/root/a").messages] == ["Task a"]

    assert (await asyncio.wait_for(root.send("Continue"), WAIT_LIMIT)).text == "all done"
    assert 'agent="/root/b" status="completed">B done<' in mail_texts(provider.requests("root")[0])[0]
    assert provider.requests("a")[0].messages == [Message.user("Task a"), Message.user("Finish A")]
    assert {i.status for i in list_subagents(root)} == {"completed"}
    await rt.aclose()
