"""Time travel through the runtime, in a real SQLite file: checkpoints, forks,
rewinds, branches, edit-and-rerun, export and deletion, and all of it across a
restart of the process."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys

import nbformat
import psutil
import pytest

from mentra_nb import (
    AgentBusy,
    AgentError,
    AgentNotFound,
    AgentStatus,
    ConfigError,
    LeaseUnavailable,
    Message,
    Runtime,
    SqliteStore,
    ToolUseBlock,
    tool,
)
from mentra_nb.runtime import AgentConfig
from mentra_nb.runtime.events import HistoryReplaced
from mentra_nb.runtime.subagents import TREE, SubagentTree, stored_tree
from mentra_nb.runtime.teams import TeamMessage
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.store import LeaseClaim
from mentra_nb.testing import controlled_stream, text_stream, tool_use_stream
from tests.children import REPO
from tests.conftest import WAIT_LIMIT, clear_leases, wait_until
from tests.runtimes import scripted_runtime as runtime


async def conversation(rt: Runtime, turns: int, name: str = "writer"):
    agent = rt.spawn(name, "test")
    for i in range(turns):
        await agent.send(f"question {i}")
    return agent


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def row_count(db_path, table: str) -> int:
    conn = sqlite3.connect(db_path)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


async def test_checkpoints_list_every_committed_message_with_its_run(db_path):
    rt = runtime(db_path)
    agent = await conversation(rt, 2)
    checkpoints = agent.checkpoints()
    assert [(c.index, c.role.value, c.run_generation) for c in checkpoints] == [
        (0, "user", 1), (1, "assistant", 1), (2, "user", 2), (3, "assistant", 2)]
    assert checkpoints[2].preview == "question 1"
    await rt.aclose()


async def test_a_fork_starts_from_the_first_messages_and_leaves_the_source_alone(db_path):
    rt = runtime(db_path)
    source = await conversation(rt, 3)
    before = source.history
    fork = source.fork("what-if", at=2)
    assert (fork.forked_from, fork.fork_index, fork.model.key) == (source.id, 2, "test:default")
    assert fork.config == source.config and fork.id != source.id
    assert fork.history == before[:2]
    reply = await fork.send("a different question")
    assert reply.text == "You said: a different question"
    assert texts(fork.history)[2:] == ["a different question", "You said: a different question"]
    assert source.history == before
    assert rt.store.lease_holder(fork.id).token == rt.store.lease_holder(source.id).token
    assert source.fork("everything").history == before  # at=None: the whole history
    await rt.aclose()


async def test_a_fork_takes_a_copy_of_its_sources_config_without_validating_it_again(db_path, monkeypatch):
    rt = runtime(db_path)
    source = rt.spawn("writer", "test", AgentConfig(system="Be brief.", max_rounds=7, hidden_tools=["grep"]))
    validated: list[object] = []
    validate = AgentConfig.model_validate.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(AgentConfig, "model_validate",
                        classmethod(lambda cls, data, **kw: validated.append(data) or validate(cls, data, **kw)))
    fork = source.fork("what-if")  # a batch job forks once per row: validating costs more than copying
    assert validated == []
    assert fork.config == source.config and fork.config is not source.config
    fork.config.hidden_tools.append("read_file")  # its own copy, lists too
    assert source.config.hidden_tools == ["grep"]
    monkeypatch.undo()
    stored = rt.store.load_agent(fork.id, transcript=False)
    assert stored is not None and AgentConfig.model_validate(stored.record.config) == source.config
    await rt.aclose()


async def test_a_fork_writes_no_copy_of_a_long_history(db_path):
    rt = runtime(db_path)
    source = rt.spawn("writer", "test")
    source.state.append_messages([Message.user(f"m{i}") for i in range(2000)])
    messages = row_count(db_path, "messages")
    fork = source.fork("fork", at=1500)
    assert row_count(db_path, "messages") == messages
    assert len(fork.history) == 1500 and fork.history[-1].text == "m1499"
    await rt.aclose()


async def test_bad_fork_points_and_names_say_what_to_do(db_path):
    rt = runtime(db_path)
    source = await conversation(rt, 1)
    with pytest.raises(AgentError, match="from 0 to 2, not 5"):
        source.fork("x", at=5)
    with pytest.raises(AgentError, match="an int"):
        source.fork("x", at="2")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not allowed"):
        source.fork("no spaces")
    with pytest.raises(Exception, match="already exists"):
        source.fork("writer")
    await rt.aclose()


async def test_forking_a_running_agent_forks_its_last_committed_state(db_path):
    started, release = asyncio.Event(), asyncio.Event()

    @tool(read_only=True)
    async def slow(value: str) -> str:
        """Waits until released."""
        started.set()
        await release.wait()
        return "done"

    rt = runtime(db_path, tool_use_stream("call-1", "slow", '{"value": "x"}'), text_stream("finished"),
                 tools=[slow])
    source = rt.spawn("writer", "anthropic:model")
    run = asyncio.create_task(source.send("go"))
    await asyncio.wait_for(started.wait(), WAIT_LIMIT)
    fork = source.fork("snapshot")
    # The user message and the tool call were committed; the call has no result
    # yet, so the fork gets an error result for it (providers need one).
    assert fork.history[0].text == "go"
    assert isinstance(fork.history[1].content[0], ToolUseBlock)
    assert fork.history[2].tool_results[0].is_error
    assert "forked before this tool call had a result" in fork.history[2].tool_results[0].content
    release.set()
    assert (await run).text == "finished"
    assert len(source.history) == 4 and len(fork.history) == 3
    await rt.aclose()


async def test_cancelling_a_run_after_a_fork_keeps_the_forks_messages(db_path):
    started = asyncio.Event()

    @tool(read_only=True)
    async def hang(value: str) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return ""

    rt = runtime(db_path, tool_use_stream("call-1", "hang", '{"value": "x"}'), tools=[hang])
    source = rt.spawn("writer", "anthropic:model")
    run = asyncio.create_task(source.send("go"))
    await asyncio.wait_for(started.wait(), WAIT_LIMIT)
    fork = source.fork("keeper")
    source.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert source.history == []
    reopened = SqliteStore(db_path)
    assert texts(reopened.load_messages(fork.id))[0] == "go"
    assert len(reopened.load_messages(fork.id)) == 3
    reopened.close()
    await rt.aclose()


async def test_a_rewind_keeps_what_followed_as_a_branch_to_switch_back_to(db_path):
    rt = runtime(db_path)
    agent = await conversation(rt, 3)
    original = agent.history
    events: list[object] = []
    agent.on_event(events.append)
    agent.rewind(2)
    assert agent.history == original[:2]
    assert [type(e) for e in events] == [HistoryReplaced]
    assert (events[0].history_len, events[0].branch_id) == (2, agent.branch_id)
    await agent.send("another turn")
    branches = agent.branches()
    assert [(b.fork_index, b.length, b.is_head) for b in branches] == [(0, 6, False), (2, 4, True)]
    assert [c.preview for c in branches[0].checkpoints][2:] == ["question 1", "You said: question 1",
                                                                 "question 2", "You said: question 2"]
    assert [c.index for c in branches[1].checkpoints] == [2, 3]
    assert branches[1].preview == "another turn"
    agent.switch_branch(branches[0].id)
    assert agent.history == original
    with pytest.raises(AgentError, match="no branch"):
        agent.switch_branch("nope")
    with pytest.raises(AgentError, match="from 0 to 6, not 7"):
        agent.rewind(7)
    await rt.aclose()


async def test_edit_sends_the_new_text_in_place_and_keeps_the_old_branch(db_path):
    rt = runtime(db_path)
    agent = await conversation(rt, 2)
    original = agent.history
    reply = await agent.edit(2, "question 1, rephrased")
    assert reply.text == "You said: question 1, rephrased"
    assert texts(agent.history) == ["question 0", "You said: question 0", "question 1, rephrased",
                                    "You said: question 1, rephrased"]
    [old] = [b for b in agent.branches() if not b.is_head]
    assert rt.store.load_messages(agent.id, branch_id=old.id) == original
    with pytest.raises(AgentError, match="the model's reply"):
        await agent.edit(1, "x")
    with pytest.raises(AgentError, match="end of the history"):
        await agent.edit(4, "x")
    await rt.aclose()


async def test_time_travel_waits_for_a_running_agent(db_path):
    script, _control = controlled_stream()
    rt = runtime(db_path, script)
    agent = rt.spawn("writer", "anthropic:model")
    run = asyncio.create_task(agent.send("hello"))
    await wait_until(lambda: agent.is_running)
    with pytest.raises(AgentBusy):
        agent.rewind(0)
    with pytest.raises(AgentBusy):
        await agent.edit(0, "x")
    with pytest.raises(AgentBusy):
        await rt.delete_agent("writer")
    agent.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await rt.aclose()


async def test_forks_rewinds_and_branches_survive_a_process_restart(db_path):
    rt = runtime(db_path)
    source = await conversation(rt, 2)
    fork = source.fork("fork", at=2)
    await fork.send("fork's own")
    source.rewind(2)
    await source.send("rewritten")
    await rt.aclose()
    script = (
        "import json, sys\n"
        "from mentra_nb import Runtime, SqliteStore\n"
        "rt = Runtime.empty(store=SqliteStore(sys.argv[1]), runtime_id='nb')\n"
        "out = {a.name: {'history': [m.text for m in a.history], 'forked_from': a.forked_from,\n"
        "                'branches': [(b.fork_index, b.length, b.is_head) for b in a.branches()]}\n"
        "       for a in rt.resume()}\n"
        "print(json.dumps(out))\n"
    )
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script, str(db_path)], cwd=REPO, capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["fork"]["history"] == ["question 0", "You said: question 0", "fork's own",
                                       "You said: fork's own"]
    assert seen["fork"]["forked_from"] == source.id
    assert seen["writer"]["history"] == ["question 0", "You said: question 0", "rewritten",
                                         "You said: rewritten"]
    assert seen["writer"]["branches"] == [[0, 4, False], [2, 4, True]]


async def test_a_fork_cut_mid_stream_is_recovered_on_its_own_branch(db_path):
    rt = runtime(db_path, text_stream("answer 0"))
    source = rt.spawn("writer", "anthropic:model")
    await source.send("question 0")
    await rt.aclose()
    script, _control = controlled_stream()
    rt = runtime(db_path, script)
    [source] = rt.resume()
    fork = source.fork("fork")
    run = asyncio.create_task(fork.send("half-written"))
    await wait_until(lambda: fork.status.is_running)  # the run began: its user message is stored
    # The kernel dies here.
    clear_leases(db_path)
    again = runtime(db_path)
    leads = {a.name: a for a in again.resume()}
    recovered = leads["fork"]
    assert recovered.status == AgentStatus.interrupted()
    assert texts(recovered.history) == ["question 0", "answer 0"]
    assert recovered.resumable_turn == Message.user("half-written")
    assert texts(leads["writer"].history) == ["question 0", "answer 0"]
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await again.aclose()


async def test_a_fork_takes_no_teammates_subagents_approvals_or_mail(db_path):
    rt = runtime(db_path)
    lead = await conversation(rt, 1, "lead")
    TREE.put(rt.store, lead.id, SubagentTree(), agent_id=lead.id, token=rt.services.token)
    team_mail.queue_mail(rt.store, lead.id, "lead", TeamMessage(sender="alice", content="unread"))
    fork = lead.fork("fork")
    assert stored_tree(rt.store, lead.id) is not None and stored_tree(rt.store, fork.id) is None
    assert team_mail.list_mail(rt.store, fork.id) == []
    assert rt.store.list_agents("nb", parent_id=fork.id) == []
    assert fork.snapshot.pending_approvals == []
    await rt.aclose()


async def test_deleting_a_parent_keeps_its_forks_and_the_messages_they_read(db_path):
    rt = runtime(db_path)
    source = await conversation(rt, 2)
    fork = source.fork("fork", at=2)
    assert await rt.delete_agent("writer") == [source.id]
    assert [r.name for r in rt.list_persisted_agents()] == ["fork"]
    with pytest.raises(AgentNotFound):
        rt.agent("writer")
    await rt.aclose()
    rt = runtime(db_path)
    [fork] = rt.resume()
    assert texts(fork.history) == ["question 0", "You said: question 0"]
    with pytest.raises(AgentNotFound, match="stored: fork"):
        await rt.delete_agent("writer")
    await rt.aclose()


async def test_deleting_with_forks_removes_the_forks_and_their_forks(db_path):
    rt = runtime(db_path)
    source = await conversation(rt, 1)
    keep = await conversation(rt, 1, "unrelated")
    fork = source.fork("fork")
    fork.fork("grandfork")
    deleted = await rt.delete_agent(source.id, with_forks=True)
    assert len(deleted) == 3 and fork.id in deleted
    assert [r.id for r in rt.list_persisted_agents()] == [keep.id]
    rt.store.vacuum()
    assert row_count(db_path, "messages") == 2
    await rt.aclose()


async def test_export_writes_the_transcript_with_its_tool_traffic(db_path, tmp_path):
    @tool(read_only=True)
    def lookup(query: str) -> str:
        """Look it up."""
        return "42 rows"

    rt = runtime(db_path, tool_use_stream("call-1", "lookup", '{"query": "sales"}'),
                 text_stream("There are 42 rows."), tools=[lookup])
    agent = rt.spawn("analyst", "anthropic:model")
    await agent.send("How many rows?")
    markdown = agent.export()
    assert markdown.startswith("# analyst")
    assert "**tool call** `lookup`" in markdown and '"query": "sales"' in markdown
    assert "**tool result**" in markdown and "42 rows" in markdown
    data = json.loads(agent.export("json", tmp_path / "t.json"))
    assert json.loads((tmp_path / "t.json").read_text()) == data
    assert [Message.model_validate(m) for m in data["messages"]] == agent.history
    agent.export("ipynb", tmp_path / "t.ipynb")
    notebook = nbformat.read(tmp_path / "t.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert len(notebook.cells) == 1 + len(agent.history)
    with pytest.raises(ConfigError, match="choose one of markdown, json, ipynb"):
        agent.export("pdf")  # type: ignore[arg-type]
    await rt.aclose()


async def test_an_agent_another_runtime_drives_is_not_deleted(db_path):
    rt = runtime(db_path)
    source = await conversation(rt, 1)
    fork = source.fork("fork")
    await rt.aclose()
    rt = runtime(db_path)
    # Another runtime, alive (it names this very process), drives the fork.
    other = LeaseClaim(owner_id="another-runtime", token="another-token", runtime_id="nb",
                       pid=os.getpid(), host=socket.gethostname(),
                       process_started_at=psutil.Process().create_time())
    rt.store.acquire_lease(fork.id, other, ttl=30)
    with pytest.raises(LeaseUnavailable):
        await rt.delete_agent("writer", with_forks=True)
    assert {r.name for r in rt.list_persisted_agents()} == {"writer", "fork"}
    assert rt.store.lease_holder(source.id) is None  # taken for the deletion, given back
    await rt.aclose()


async def test_fork_stored_forks_an_agent_another_runtime_drives_without_taking_it(tmp_path):
    from mentra_nb.providers.test import TestProvider
    from mentra_nb.runtime import Runtime
    from mentra_nb.store.sqlite import SqliteStore

    owner_store, other_store = SqliteStore(tmp_path / "s.sqlite"), SqliteStore(tmp_path / "s.sqlite")
    owner = Runtime.empty(store=owner_store, providers=[TestProvider()], runtime_id="nb")
    other = Runtime.empty(store=other_store, providers=[TestProvider()], runtime_id="nb")
    try:
        writer = owner.spawn("writer", "test", AgentConfig(system="be brief"))
        await writer.send("hello")
        fork = other.fork_stored(writer.id, "copy")
        assert [m.text for m in fork.history] == [m.text for m in writer.history]
        assert fork.config.system == "be brief" and fork.model == writer.model
        assert owner_store.lease_holder(writer.id).token == owner.services.token  # still the owner's
        await fork.send("again")
        assert len(fork.history) == 4 and len(writer.history) == 2
        await writer.send("and the owner goes on")
    finally:
        await other.aclose()
        await owner.aclose()
        owner_store.close()
        other_store.close()
