"""Bad input, fuzzed with hypothesis: every case ends in a clear error or is ignored,
never an unhandled exception, never a changed file that should not change.

- `%mentra` lines through the real parser, and through an IPython shell;
- messages from the browser into `AgentView._on_browser_message`;
- tool inputs (any JSON text, or none) that a model sends to typed tools;
- state files: truncated, random bytes, another application's SQLite, a newer schema.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import string
from pathlib import Path
from typing import Annotated, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
from pydantic import Field

import mentra_nb.notebook as notebook
from mentra_nb import MentraError, Runtime, SqliteStore, StoreError, tool
from mentra_nb.notebook import _arguments as arguments
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.providers.test import TestProvider
from mentra_nb.store.sqlite import APPLICATION_ID, SCHEMA_VERSION
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import WAIT_LIMIT, until
from tests.reliability.conftest import digests

pytestmark = pytest.mark.reliability

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

COMMANDS = [*arguments.COMMANDS, "", "spawnn", "--wait"]
WORDS = st.one_of(
    st.sampled_from([*COMMANDS, "--model", "--system", "--tools", "--wait", "--all", "--no-interpolate",
                     "--", "-", "test", "test:m", "nope:x", "writer", "'", '"', "a b", "{x}", "\\",
                     "--tools=", "é", "\x00", "NAME", "../x", "a" * 70]),
    st.text(alphabet=string.printable + "éλ🙂\x00\u2028", max_size=12),
)
LINES = st.one_of(st.lists(WORDS, max_size=6).map(" ".join), st.text(max_size=40))


# --- magic lines ----------------------------------------------------------------------


@FUZZ
@given(line=LINES)
def test_the_magic_parser_returns_a_command_or_a_parse_error_with_usage(line: str) -> None:
    try:
        command = arguments.parse_line(line)
    except arguments.ParseError as err:
        assert "%mentra" in str(err), err  # its usage line, or an example of one
    else:
        assert isinstance(command, arguments.Command)
    try:
        arguments.parse_cell(line)
    except arguments.ParseError as err:
        assert "%mentra" in str(err), err


@pytest.fixture
def shell(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    ip = start_ipython() or get_ipython()
    for name in ("__session__", "__vsc_ipynb_file__"):
        ip.user_ns.pop(name, None)
    notebook.load_ipython_extension(ip)
    ip.run_line_magic("mentra", "spawn writer")
    yield ip
    notebook.unload_ipython_extension(ip)
    ip.config.pop("MentraMagics", None)


# `db` moves the state file wherever the line says and `models` asks real servers:
# both are covered by the parser test above, not run here.
SAFE = st.lists(WORDS, max_size=6).map(" ".join).filter(
    lambda line: not line.strip().startswith(("db", "models")))


@settings(FUZZ, max_examples=80)
@given(line=SAFE, body=st.one_of(st.none(), st.text(max_size=30)))
def test_the_magics_answer_bad_lines_with_a_usage_or_mentra_error(shell, tmp_path, line, body) -> None:
    outside = set(os.listdir(tmp_path))
    try:
        if body is None:
            shell.run_line_magic("mentra", line)
        else:
            shell.run_cell_magic("mentra", line, body)
    except (UsageError, MentraError) as err:
        assert str(err).strip(), f"an empty error for {line!r}"
    # Nothing but the notebook's own state folder ever appears in the folder.
    assert set(os.listdir(tmp_path)) - outside <= {".mentra"}


# --- browser messages ---------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                      max_size=4),
    max_leaves=12,
)
BROWSER = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["hello", "stop", "interrupt", "send", "approve", "deny", "HELLO",
                                  "", "load_older", 7])},
        optional={"text": JSON | st.text(max_size=5), "call_id": JSON, "always": JSON,
                  "reason": JSON, "seq": JSON},
    ),
)


@pytest.fixture
def view():
    host = RuntimeHost()
    rt = host.call(lambda: Runtime.empty(providers=[TestProvider()]))
    agent = host.call(lambda: rt.spawn("writer", "test"))
    widget = AgentView(agent, host)
    yield widget
    widget.close()
    host.submit(rt.aclose()).result(30)
    host.stop()


@FUZZ
@given(content=BROWSER)
def test_messages_from_the_browser_are_acted_on_or_ignored(view, content, caplog) -> None:
    agent = view._agent
    # Hypothesis reuses the view across examples: let a turn an earlier valid
    # message started finish first, so it is not counted against this one.
    view._host.call(lambda: None)
    until(lambda: not agent.is_running)
    before = (len(agent.history), agent.snapshot.run_generation)
    with caplog.at_level(logging.WARNING, logger="mentra_nb.notebook"):
        view._on_browser_message(view, content, [])
    valid = isinstance(content, dict) and content.get("kind") in {
        "hello", "stop", "interrupt", "send", "approve", "deny"}
    if not valid:
        assert (len(agent.history), agent.snapshot.run_generation) == before
        assert "ignored an invalid message" in caplog.text


# --- tool inputs --------------------------------------------------------------------------


@tool
def typed(count: int, names: list[str], mode: Literal["fast", "slow"] = "fast",
          ratio: Annotated[float, Field(ge=0, le=1)] = 0.5) -> str:
    """A tool with typed, constrained arguments."""
    return f"{count} {names} {mode} {ratio}"


TOOL_INPUTS = st.one_of(
    JSON.map(json.dumps),
    st.text(max_size=30),
    st.fixed_dictionaries({"count": JSON, "names": JSON}, optional={"mode": JSON, "ratio": JSON})
    .map(json.dumps),
    st.just('{"count": 1, "names": ["a"]'),  # cut short
)


@settings(FUZZ, max_examples=60)
@given(raw=TOOL_INPUTS, name=st.sampled_from(["typed", "typed", "nope", "a" * 200]))
def test_any_tool_input_goes_back_to_the_model_never_into_the_cell(raw: str, name: str) -> None:
    async def scenario() -> None:
        provider = ScriptedProvider("s", [tool_use_stream("call-1", name, raw), text_stream("done")])
        async with Runtime.empty(providers=[provider], tools=[typed]) as rt:
            agent = rt.spawn("w", "s:m")
            reply = await asyncio.wait_for(agent.send("go"), WAIT_LIMIT)
            assert reply.text == "done"
            [result] = agent.history[2].tool_results
            assert result.tool_use_id == "call-1" and result.content

    asyncio.run(scenario())


# --- state files ----------------------------------------------------------------------------


def _valid_store(path: Path) -> bytes:
    async def make() -> None:
        store = SqliteStore(path)
        rt = Runtime.empty(store=store, providers=[ScriptedProvider("s", [text_stream("hi there")])])
        await rt.spawn("w", "s:m").send("hello")
        await rt.aclose()
        store.close()

    asyncio.run(make())
    return path.read_bytes()


class StoreBytes(bytes):
    def __repr__(self) -> str:  # hypothesis prints fixtures of failing cases
        return f"<{len(self)} bytes of a valid store>"


@pytest.fixture(scope="module")
def valid_store_bytes(tmp_path_factory) -> bytes:
    return StoreBytes(_valid_store(tmp_path_factory.mktemp("valid") / "valid.mentra.sqlite"))


def _foreign_sqlite(path: Path, tables: list[str], user_version: int, application_id: int) -> None:
    conn = sqlite3.connect(path)
    for table in tables:
        conn.execute(f'CREATE TABLE IF NOT EXISTS "{table}" (x)')
        conn.execute(f'INSERT INTO "{table}" VALUES (1)')
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.execute(f"PRAGMA application_id = {application_id}")
    conn.commit()
    conn.close()


def _opens_or_refuses_untouched(path: Path) -> None:
    before = digests(path)
    try:
        store = SqliteStore(path)
    except StoreError as err:
        assert str(path) in str(err), err
        assert digests(path) == before, "a refused file was changed"
        return
    try:
        for record in store.list_agents():
            store.load_agent(record.id)
    except StoreError:
        pass
    finally:
        store.close()



def test_a_store_with_a_damaged_schema_text_is_refused_with_a_store_error(
    tmp_path, valid_store_bytes
) -> None:
    data = bytearray(valid_store_bytes)
    data[2112] = 0x80  # inside the schema's SQL text on page 1: not UTF-8 any more
    path = tmp_path / "analysis.mentra.sqlite"
    path.write_bytes(bytes(data))
    _opens_or_refuses_untouched(path)


# Damage can also surface as a UnicodeDecodeError out of sqlite3 (a flipped text-encoding byte).
@settings(FUZZ, max_examples=60)
@given(cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=4))
def test_a_damaged_store_file_opens_or_is_refused_untouched(tmp_path_factory, valid_store_bytes,
                                                            cut, flips) -> None:
    data = bytearray(valid_store_bytes[: int(len(valid_store_bytes) * cut)])
    for where, value in flips:
        if data:
            data[int(where * (len(data) - 1))] = value
    path = tmp_path_factory.mktemp("damaged") / "analysis.mentra.sqlite"
    path.write_bytes(bytes(data))
    _opens_or_refuses_untouched(path)


@settings(FUZZ, max_examples=40)
@given(data=st.binary(max_size=2048), header=st.booleans())
def test_random_bytes_are_refused_untouched(tmp_path_factory, data: bytes, header: bool) -> None:
    path = tmp_path_factory.mktemp("random") / "analysis.mentra.sqlite"
    path.write_bytes((b"SQLite format 3\x00" if header else b"") + data)
    _opens_or_refuses_untouched(path)


@settings(FUZZ, max_examples=30)
@given(tables=st.lists(st.sampled_from(["agents", "messages", "users", "leases", "t"]), max_size=3),
       user_version=st.integers(0, 2**31 - 1),
       application_id=st.sampled_from([0, 1, APPLICATION_ID, 0x0F0F0F0F]))
def test_another_apps_sqlite_or_a_newer_schema_is_refused_untouched(
    tmp_path_factory, tables, user_version, application_id
) -> None:
    path = tmp_path_factory.mktemp("foreign") / "analysis.mentra.sqlite"
    _foreign_sqlite(path, tables, user_version, application_id)
    before = digests(path)
    ours = application_id == APPLICATION_ID
    blank = not tables and application_id == 0
    if blank and user_version:
        return  # test_a_blank_database_with_another_apps_user_version_is_refused_untouched
    if (ours and user_version <= SCHEMA_VERSION) or blank:
        _opens_or_refuses_untouched(path)
        return
    with pytest.raises(StoreError) as caught:
        SqliteStore(path)
    message = str(caught.value)
    assert "left untouched" in message or "newer" in message, message
    assert digests(path) == before


@pytest.mark.parametrize("user_version", [1, SCHEMA_VERSION + 1])
def test_a_blank_database_with_another_apps_user_version_is_refused_untouched(
    tmp_path, user_version
) -> None:
    path = tmp_path / "analysis.mentra.sqlite"
    _foreign_sqlite(path, [], user_version, 0)
    before = digests(path)
    with pytest.raises(StoreError):
        SqliteStore(path)
    assert digests(path) == before


TEAM_AND_PICKER = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["approve", "reject", "approve_call", "deny_call", "open", "older",
                                  "close", "interrupt", "", 3])},
        optional={"request_id": JSON | st.text(max_size=8), "reason": JSON | st.text(max_size=8),
                  "path": JSON | st.sampled_from(["/root/a", "/root", "../x", "/root/A b"]),
                  "agent": JSON | st.sampled_from(["lead", "ghost", ""]),
                  "call_id": JSON | st.text(max_size=8), "always": JSON},
    ),
)


@pytest.fixture
def team_and_picker():
    from mentra_nb import AgentConfig
    from mentra_nb.notebook.subagent_picker import SubagentPickerView
    from mentra_nb.notebook.team_view import TeamView

    host = RuntimeHost()
    rt = host.call(lambda: Runtime.empty(providers=[TestProvider()]))
    lead = host.call(lambda: rt.spawn("lead", "test", config=AgentConfig(team=True, subagents=True)))
    widgets = [TeamView(lead, host), SubagentPickerView(lead, host)]
    yield lead, host, widgets
    for widget in widgets:
        widget.close()
    host.submit(rt.aclose()).result(30)
    host.stop()


@FUZZ
@given(content=TEAM_AND_PICKER)
def test_team_and_picker_messages_are_acted_on_or_ignored(team_and_picker, content) -> None:
    lead, host, widgets = team_and_picker
    for widget in widgets:
        widget._on_browser_message(widget, content, [])  # never raises into the kernel
    host.call(lambda: None)  # what was handed to the runtime ran, and did not break it
    assert lead.status.name in ("idle", "finished")
    assert all(isinstance(widget.notice, str) for widget in widgets)
