"""`rt.post`: mail for an agent that another process (here: another "host")
drives wakes it, and its owner runs it as a turn: a user turn for a plain agent,
a `<team-inbox>` item for a teammate. On SQLite (a `PRAGMA data_version` poll)
and on Postgres (LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from mentra_nb import AgentError, AgentNotFound, ConfigError, Runtime
from mentra_nb.runtime.teams import INBOX_MARKER
from mentra_nb.runtime.teams import mail as team_mail
from mentra_nb.store import open_store
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.conftest import until
from tests.hosts.host_child import RUNTIME_ID

pytestmark = pytest.mark.process


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "shared.mentra.sqlite")
    return request.getfixturevalue("pg_dsn")


def woke(line: str) -> tuple[str, str]:
    _, name, text = line.split(" ", 2)
    return name, json.loads(text)


async def test_mail_posted_on_one_host_wakes_a_plain_agent_on_the_other_as_a_user_turn(
    location, host_b, start_host_a
):
    child = start_host_a(location, "own")
    writer_id = child.ready()[0]
    store = open_store(location)
    rt = Runtime.empty(store=store, runtime_id=RUNTIME_ID)
    try:
        posted = time.monotonic()
        rt.post("writer", "hello from host b")  # by name: host-a owns it
        assert woke(child.wait_for("WOKE writer", timeout=30)) == ("writer", "hello from host b")
        latency = time.monotonic() - posted
        assert child.wait_for("DONE writer", timeout=30) == 'DONE writer "echo: hello from host b"'
        engine = "postgres" if location.startswith("postgresql:") else "sqlite"
        print(f"\nwake-up latency across processes ({engine}): {latency:.3f} s")
        texts = [m.text for m in store.load_messages(writer_id)]
        assert texts == ["hello from host b", "echo: hello from host b"]
        # Acked once the run has ended (just after its last event): delivered exactly once.
        until(lambda: [m.state for m in team_mail.MAIL.list(store, writer_id, "writer")] == ["done"],
              timeout=30)
    finally:
        await rt.aclose()
        store.close()


async def test_mail_posted_for_a_teammate_reaches_its_inbox_on_the_other_host(
    location, host_b, start_host_a
):
    child = start_host_a(location, "own")
    _writer_id, lead_id, mate_id = child.ready()
    store = open_store(location)
    rt = Runtime.empty(store=store, runtime_id=RUNTIME_ID)
    try:
        rt.post(mate_id, "please review", sender="reviewer")
        name, text = woke(child.wait_for("WOKE mate", timeout=30))
        assert INBOX_MARKER in text
        [item] = json.loads(text.split(INBOX_MARKER, 1)[1].rsplit("</team-inbox>", 1)[0])
        assert (item["from"], item["content"]) == ("reviewer", "please review")
        child.wait_for("DONE mate", timeout=30)
        until(lambda: [m.state for m in team_mail.MAIL.list(store, lead_id, "mate")] == ["done"],
              timeout=30)
    finally:
        await rt.aclose()
        store.close()


async def test_mail_for_an_agent_of_this_runtime_runs_it_here(tmp_path):
    store = open_store(tmp_path / "one.mentra.sqlite")
    provider = ScriptedProvider("scripted", [text_stream("got it")])
    rt = Runtime.empty(store=store, providers=[provider], runtime_id="nb")
    try:
        writer = rt.spawn("writer", "scripted:m")
        rt.post("writer", "a note")
        deadline = time.monotonic() + 30
        while len(writer.history) < 2 or writer.is_running:
            assert time.monotonic() < deadline, "the posted mail never ran"
            await asyncio.sleep(0.01)
        assert [m.text for m in writer.history] == ["a note", "got it"]
    finally:
        await rt.aclose()
        store.close()


async def test_mail_waits_while_no_process_drives_the_agent_and_runs_on_resume(tmp_path):
    path = tmp_path / "one.mentra.sqlite"
    store = open_store(path)
    first = Runtime.empty(store=store, providers=[ScriptedProvider("scripted")], runtime_id="nb")
    writer_id = first.spawn("writer", "scripted:m").id
    await first.aclose()
    poster = Runtime.empty(store=store, runtime_id="nb")
    poster.post("writer", "while you were away")
    await poster.aclose()
    provider = ScriptedProvider("scripted", [text_stream("back now")])
    rt = Runtime.empty(store=store, providers=[provider], runtime_id="nb")
    try:
        [writer] = rt.resume()
        assert writer.id == writer_id
        deadline = time.monotonic() + 30
        while len(writer.history) < 2 or writer.is_running:
            assert time.monotonic() < deadline, "the waiting mail never ran"
            await asyncio.sleep(0.01)
        assert [m.text for m in writer.history] == ["while you were away", "back now"]
    finally:
        await rt.aclose()
        store.close()


async def test_posting_to_an_unknown_agent_a_subagent_or_nothing_is_a_clear_error(tmp_path):
    store = open_store(tmp_path / "one.mentra.sqlite")
    rt = Runtime.empty(store=store, runtime_id="nb")
    try:
        rt.spawn("writer", "test:m")
        with pytest.raises(AgentNotFound, match="no agent 'writre'.*agents: writer"):
            rt.post("writre", "hi")
        with pytest.raises(ConfigError, match="needs some content"):
            rt.post("writer", "  ")
        kid = rt._create_agent("kid", "test:m", kind="subagent", parent_id=rt.agent("writer").id)
        with pytest.raises(AgentError, match="subagent"):
            rt.post(kid.id, "hi")
    finally:
        await rt.aclose()
        store.close()


async def test_mail_posted_during_a_run_runs_once_that_run_ends(tmp_path):
    from mentra_nb.testing import controlled_stream

    store = open_store(tmp_path / "one.mentra.sqlite")
    first, control = controlled_stream()
    provider = ScriptedProvider("scripted", [first, text_stream("second answer")])
    rt = Runtime.empty(store=store, providers=[provider], runtime_id="nb")
    try:
        writer = rt.spawn("writer", "scripted:m")
        run = asyncio.ensure_future(writer.send("first"))
        while not writer.is_running:
            await asyncio.sleep(0.01)
        rt.post("writer", "while you work")  # its last round is already streaming
        for event in text_stream("first answer").events:
            control.send(event)
        control.close()
        await run
        deadline = time.monotonic() + 30
        while len(writer.history) < 4 or writer.is_running:
            assert time.monotonic() < deadline, "the mail posted during the run never ran"
            await asyncio.sleep(0.01)
        assert [m.text for m in writer.history] == ["first", "first answer", "while you work",
                                                     "second answer"]
    finally:
        await rt.aclose()
        store.close()


async def test_mail_holding_a_secret_it_did_not_know_when_posted_is_delivered_masked_and_once(
        tmp_path, monkeypatch):
    """Mail stored with a key the poster did not know as secret is masked when the owner
    writes it into the transcript, and counts as delivered all the same (not run again)."""
    key = "k3y-posted-before-it-was-known-0123"
    store = open_store(tmp_path / "one.mentra.sqlite")
    poster = Runtime.empty(store=store, runtime_id="nb")
    provider = ScriptedProvider("scripted", [text_stream("read it"), text_stream("a second run")])
    rt = Runtime.empty(store=store, providers=[provider], runtime_id="nb")
    try:
        writer = rt.spawn("writer", "scripted:m")
        monkeypatch.delenv("MENTRA_LATE_API_KEY", raising=False)
        poster.post("writer", f"the key is {key}")
        assert key in team_mail.MAIL.list(store, writer.id)[0].message.content  # stored as posted
        monkeypatch.setenv("MENTRA_LATE_API_KEY", key)  # known to the runtime from now on
        await poster.aclose()
        rt.resume_agent(writer.id)  # the mail is taken up here
        deadline = time.monotonic() + 30
        while len(writer.history) < 2 or writer.is_running:
            assert time.monotonic() < deadline, "the posted mail never ran"
            await asyncio.sleep(0.01)
        assert [m.text for m in writer.history] == ["the key is [redacted]", "read it"]
        until(lambda: [m.state for m in team_mail.MAIL.list(store, writer.id)] == ["done"])
        assert len(provider.requests) == 1  # delivered once, not requeued for the masked text
    finally:
        await poster.aclose()
        await rt.aclose()
        store.close()
