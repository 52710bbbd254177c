"""Every %mentra subcommand and every usage error, in a real IPython shell."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import io
import threading
import time

import pytest
from IPython.core.error import UsageError
from IPython.lib.pretty import pretty

import mentra_nb.notebook as notebook
from mentra_nb import (
    AgentExists,
    AgentStatus,
    ConfigError,
    ContentBlockDelta,
    ContentBlockStarted,
    Message,
    MessageStarted,
    ProviderAuthError,
    UnknownProvider,
)
from mentra_nb.notebook._arguments import COMMANDS
from mentra_nb.notebook._session import NotebookSession
from mentra_nb.testing import ScriptedProvider, controlled_stream, text_stream
from tests.conftest import WAIT_LIMIT, wait_until
from tests.notebook.conftest import mentra, mentra_cell


def test_help_lists_every_command_with_its_generated_usage(ip, capsys):
    mentra(ip, "help")
    out = capsys.readouterr().out
    for command in COMMANDS.values():
        assert command.usage() in out
    assert "%%mentra NAME [--wait] [--no-interpolate]" in out
    mentra(ip, "help spawn")
    assert capsys.readouterr().out.startswith(
        "%mentra spawn NAME [--model PROVIDER:MODEL] [--system TEXT] [--tools A,B]")


def test_spawn_without_a_model_uses_the_offline_test_model_and_says_so(ip, capsys):
    agent = mentra(ip, "spawn writer")
    assert "uses the offline test model" in capsys.readouterr().out
    assert agent.name == "writer" and agent.model.key == "test:default"


def test_a_trailing_comment_ends_a_magic_line_but_not_a_message(ip, session):
    # IPython hands a line magic the whole line, comment included; the docs' first
    # cell `%mentra spawn writer  # …` was a usage error.
    mentra(ip, "spawn writer --tools ''   # the drafter, offline")
    assert session.agent("writer").config.tools == []
    mentra_cell(ip, "writer --wait  # answers at once", "say hi")
    turn = mentra(ip, "send writer --wait see issue #42 # not a comment")
    assert turn.text.endswith("see issue #42 # not a comment")  # the test model echoes it


def test_spawn_takes_model_system_and_tools(ip):
    agent = mentra(ip, "spawn analyst --model test:precise --system 'Be brief.' --tools read_file,glob")
    assert agent.model.key == "test:precise"
    assert agent.config.system == "Be brief."
    assert agent.config.tools == ["read_file", "glob"]


def test_spawn_refuses_unknown_tool_names_before_storing_anything(ip, session):
    """Issue 15.8: an unknown --tools name was accepted and failed later."""
    with pytest.raises(ConfigError, match=r"unknown tool 'reed_file' in --tools; did you mean 'read_file'\?"):
        mentra(ip, "spawn analyst --tools reed_file,glob")
    assert session.records() == []
    # Team, subagent and MCP tools are known before the agent exists.
    mentra(ip, "spawn lead --tools team_send,spawn_agent,mcp__time__now")


def test_spawn_refuses_an_explicit_model_whose_key_is_missing(ip, session, monkeypatch):
    """Issue 15.8: a missing key for an explicit --model was accepted at spawn."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    try:
        mentra(ip, "spawn writer --model anthropic:claude-sonnet-4-5")
    except ProviderAuthError as err:
        assert "ANTHROPIC_API_KEY" in str(err)
    else:  # the ip fixture runs in an empty folder, with no key in the environment
        pytest.fail("spawn accepted an explicit Anthropic model without its key")
    assert session.records() == []


def test_rerunning_a_spawn_cell_attaches_to_the_agent_it_made(ip, session, capsys):
    """Issue 15.1: rerunning `%mentra spawn writer` failed with AgentExists."""
    first = mentra(ip, "spawn writer --system 'Be brief.'")
    mentra_cell(ip, "writer --wait", "hello")
    capsys.readouterr()
    again = mentra(ip, "spawn writer --system 'Be brief.'")
    assert again is first and len(again.history) == 2
    assert capsys.readouterr().out == ""  # live already: nothing to say


def test_a_spawn_cell_with_other_settings_says_what_differs_and_replace_starts_over(ip, session, capsys):
    first = mentra(ip, "spawn writer --system 'Be brief.'")
    mentra_cell(ip, "writer --wait", "hello")
    with pytest.raises(AgentExists, match=r"system 'Be brief.', not 'Be long.'.*--replace"):
        mentra(ip, "spawn writer --system 'Be long.'")
    with pytest.raises(AgentExists, match=r"model test:default, not test:other"):
        mentra(ip, "spawn writer --system 'Be brief.' --model test:other")
    capsys.readouterr()
    fresh = mentra(ip, "spawn writer --system 'Be long.' --replace")
    assert fresh.id != first.id and fresh.history == [] and fresh.config.system == "Be long."
    assert "kept as 'writer.replaced-1'" in capsys.readouterr().out
    names = {r.name: r.message_count for r in session.records()}
    assert names == {"writer.replaced-1": 2, "writer": 0}  # nothing was deleted
    old = mentra(ip, "resume writer.replaced-1")
    assert old is None and session.agent("writer.replaced-1").history[0].text == "hello"


def test_the_configured_default_model_is_used(ip):
    ip.run_line_magic("config", "MentraMagics.default_model = 'test:configured'")
    assert mentra(ip, "spawn writer").model.key == "test:configured"


def test_a_default_model_without_its_key_falls_back_offline_and_says_why(ip, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    ip.run_line_magic("config", "MentraMagics.default_model = 'anthropic:claude-sonnet-4-5'")
    agent = mentra(ip, "spawn writer")
    out = capsys.readouterr().out
    # The ip fixture runs in an empty folder, with no key in the environment.
    assert agent.model.provider != "anthropic"
    assert "ANTHROPIC_API_KEY" in out and "uses the offline test model" in out
    assert agent.model.key == "test:default"


def test_spawn_errors_are_typed_and_say_what_to_do(ip):
    with pytest.raises(UnknownProvider, match="did you mean 'anthropic'"):
        mentra(ip, "spawn other --model antropic:x")


def test_a_cell_sends_its_body_and_interpolates_kernel_variables(ip, capsys):
    mentra(ip, "spawn writer")
    ip.user_ns["rows"] = 120
    reply = mentra_cell(ip, "writer --wait", "We have {rows} rows.\n")
    assert isinstance(reply, Message) and reply.text == "You said: We have 120 rows."
    assert pretty(reply) == "You said: We have 120 rows."  # the cell's result reads as the reply
    assert repr(reply.turn) == "Turn(writer, run 1)" and reply.turn.done()
    # The cell showed its turn alone (not the spawn's whole view).
    assert "AgentView(writer, turn 1)" in capsys.readouterr().out


def test_no_interpolate_sends_braces_as_written(ip):
    mentra(ip, "spawn writer")
    reply = mentra_cell(ip, "writer --wait --no-interpolate", "a dict: {rows}")
    assert reply.text == "You said: a dict: {rows}"


def test_a_cell_returns_at_once_and_the_turn_can_be_awaited(ip, session):
    script, control = controlled_stream()
    session.runtime.providers.register(ScriptedProvider("scripted", [script]))
    mentra(ip, "spawn writer --model scripted:m")
    turn = mentra_cell(ip, "writer", "hello")
    assert not turn.done()
    for event in text_stream("streamed reply").events:
        session.host.call_soon(control.send, event)

    async def wait():
        return await turn

    assert asyncio.run(wait()).text == "streamed reply"


def test_a_cell_sent_to_a_busy_agent_waits_for_its_run_then_sends(ip, session):
    # Run All: `%%mentra writer` returns at once, and the next cell sends to writer
    # while it still streams. It waits for that run instead of failing (AgentBusy).
    script, control = controlled_stream()
    session.runtime.providers.register(ScriptedProvider("scripted", [script, text_stream("second")]))
    agent = mentra(ip, "spawn writer --model scripted:m")
    first = mentra_cell(ip, "writer", "first")

    class Said(io.StringIO):
        waiting = threading.Event()

        def write(self, text: str) -> int:
            if "still on run 1" in text:
                self.waiting.set()
            return super().write(text)

    said = Said()

    def finish_the_first_run_once_the_cell_waits() -> None:
        assert said.waiting.wait(WAIT_LIMIT)
        for event in text_stream("first reply").events:
            session.host.call_soon(control.send, event)

    releaser = threading.Thread(target=finish_the_first_run_once_the_cell_waits)
    releaser.start()
    with contextlib.redirect_stdout(said):
        reply = mentra_cell(ip, "writer --wait", "second")
    releaser.join()
    assert "this cell sends when it ends" in said.getvalue()
    assert first.result(5).text == "first reply"
    assert reply.text == "second" and reply.turn.run_generation == 2
    assert [m.text for m in agent.history] == ["first", "first reply", "second", "second"]


def test_prompt_errors_are_usage_errors(ip):
    mentra(ip, "spawn writer")
    with pytest.raises(UsageError, match=r"names \{missing\}.*--no-interpolate"):
        mentra_cell(ip, "writer", "use {missing}")
    with pytest.raises(UsageError, match="the cell is empty"):
        mentra_cell(ip, "writer", "   \n")
    with pytest.raises(UsageError, match="usage: %%mentra NAME"):
        mentra_cell(ip, "", "hello")


def test_send_is_the_line_form_of_the_cell(ip):
    mentra(ip, "spawn writer")
    turn = mentra(ip, "send writer --wait hello there")
    assert turn.text == "You said: hello there"


@pytest.mark.parametrize(("line", "message"), [
    ("", "say what to do"),
    ("spwn writer", "unknown command 'spwn'; the commands are: spawn, send"),
    ("spawn", "NAME is missing\nusage: %mentra spawn NAME"),
    ("spawn 'two words'", "'two words' is not a valid agent name"),
    ("spawn writer --colour red", "unknown option --colour; options: --model, --system, --tools"),
    ("spawn writer --model", "--model needs a value"),
    ("spawn 'writer", "cannot read the line (No closing quotation); close your quotes"),
    ("list extra", "unexpected 'extra'\nusage: %mentra list"),
    ("send writer", "TEXT is missing"),
    ("resume writer --all", "give NAME or --all, not both"),
    ("help nothing", "no command 'nothing'"),
    ("team", "LEAD is missing\nusage: %mentra team LEAD"),
    ("teammate lead", "NAME is missing"),
    ("subagents", "NAME is missing\nusage: %mentra subagents NAME"),
    ("interrupt", "NAME is missing\nusage: %mentra interrupt NAME"),
    ("stop a b", "unexpected 'b'\nusage: %mentra stop NAME"),
    ("db a b", "unexpected 'b'"),
    ("models x y", "unexpected 'y'"),
    ("resume --al", "unknown option --al; options: --all"),
])
def test_bad_input_is_a_usage_error_with_the_usage_line(ip, line, message):
    with pytest.raises(UsageError) as info:
        mentra(ip, line)
    assert message in str(info.value)


def test_runtime_errors_print_one_clear_line_without_a_traceback(ip, capsys):
    ip.run_cell("%mentra send nobody hello")
    out = capsys.readouterr().out
    assert out.strip() == ("AgentNotFound: no live agent named 'nobody' in this kernel; "
                           "spawn it with %mentra spawn nobody")


def test_list_shows_stored_and_live_agents(ip, capsys):
    mentra(ip, "spawn writer")
    mentra(ip, "send writer --wait hi")
    capsys.readouterr()
    mentra(ip, "list")
    out = capsys.readouterr().out
    assert "agents of 'notebook'" in out
    assert "writer  live    test:default" in out and "finished" in out
    assert "1 turns     2 messages" in out


def test_interrupt_rolls_the_turn_back_and_stop_keeps_the_work(ip, session):
    script, control = controlled_stream()
    session.runtime.providers.register(ScriptedProvider("scripted", [script, text_stream("again")]))
    agent = mentra(ip, "spawn writer --model scripted:m")
    turn = mentra(ip, "send writer hello")
    for event in (MessageStarted(), ContentBlockStarted.text(0), ContentBlockDelta.text(0, "Hel")):
        session.host.call_soon(control.send, event)
    asyncio.run(wait_until(lambda: agent.snapshot.current_text == "Hel"))
    mentra(ip, "interrupt writer")
    with pytest.raises(concurrent.futures.CancelledError):
        turn.result(5)
    assert agent.history == [] and agent.status == AgentStatus.idle()
    assert agent.resumable_turn.text == "hello"
    mentra(ip, "stop writer")  # nothing running: a no-op, not an error
    assert session.host.submit(agent.resume()).result(5).text == "again"


def test_db_shows_the_state_file_and_can_move_it(ip, session, tmp_path, capsys):
    mentra(ip, "spawn writer")
    mentra(ip, "db")
    out = capsys.readouterr().out
    assert f"state file: {tmp_path / '.mentra' / 'mentra.sqlite'}" in out and "runtime id: notebook" in out
    old_store = session.runtime.store
    agent_id = session.runtime.agents[0].id
    mentra(ip, "db elsewhere.mentra.sqlite")
    assert f"state file: {tmp_path / 'elsewhere.mentra.sqlite'}" in capsys.readouterr().out
    assert old_store.lease_holder(agent_id) is None  # the old runtime let go
    assert session.runtime.agents == []


def test_models_lists_what_a_provider_offers(ip, capsys):
    mentra(ip, "models test")
    assert capsys.readouterr().out.strip() == "test: test:default"


def test_resume_brings_stored_agents_back_in_a_new_session(ip, tmp_path, capsys):
    mentra(ip, "spawn writer")
    mentra(ip, "send writer --wait first")
    notebook.unload_ipython_extension(ip)  # what a kernel restart does to this process's state
    notebook.load_ipython_extension(ip)
    capsys.readouterr()
    mentra(ip, "resume")
    out = capsys.readouterr().out
    assert "mentra: resumed 'writer', 2 messages, finished" in out
    assert "AgentView(writer, test:default, finished, 2 messages)" in out
    with pytest.raises(Exception, match="no stored agent named 'ghost'.*stored: writer"):
        mentra(ip, "resume ghost")


def test_resume_makes_its_views_with_the_garbage_collector_paused(ip, monkeypatch):
    # Everything resuming makes lives on; with the collector on, a resume of fifty long
    # agents spent a third of its time walking it (mentra_nb/_collector.py).
    mentra(ip, "spawn writer")
    mentra(ip, "spawn reviewer")
    notebook.unload_ipython_extension(ip)
    notebook.load_ipython_extension(ip)
    collecting = []
    view = NotebookSession.view

    def watched_view(self, agent):
        collecting.append(gc.isenabled())
        return view(self, agent)

    monkeypatch.setattr(NotebookSession, "view", watched_view)
    assert gc.isenabled()
    mentra(ip, "resume")
    assert collecting == [False, False]
    assert gc.isenabled()


def test_loading_twice_keeps_one_session_runtime_and_leases(ip, session):
    agent = mentra(ip, "spawn writer")
    holder = session.runtime.store.lease_holder(agent.id)
    ip.run_line_magic("load_ext", "mentra_nb")
    notebook.load_ipython_extension(ip)
    assert notebook.session(ip) is session
    assert session.runtime.store.lease_holder(agent.id) == holder
    assert mentra(ip, "send writer --wait still here").text == "You said: still here"


def test_an_agent_displays_as_its_one_long_lived_view(ip, session, capsys):
    agent = mentra(ip, "spawn writer")
    assert ip.display_formatter.ipython_display_formatter(agent)
    assert "AgentView(writer, test:default, idle, 0 messages)" in capsys.readouterr().out
    assert session.view(agent) is session.view(agent)


def test_subagents_shows_the_picker_of_an_agent_that_may_delegate(ip, capsys):
    agent = mentra(ip, "spawn lead --subagents")
    assert agent.config.subagents is not None
    mentra(ip, "subagents lead")
    assert "SubagentPickerView(lead, 0 subagents)" in capsys.readouterr().out
    mentra(ip, "spawn solo")
    ip.run_cell("%mentra subagents solo")
    assert "subagents=True" in capsys.readouterr().out


def test_teammate_joins_a_team_and_team_shows_it(ip, capsys):
    mentra(ip, "spawn lead --team")
    mentra(ip, "teammate lead alice --role researcher --prompt 'Find sources'")
    out = capsys.readouterr().out
    assert "mentra: 'alice' joined lead's team as researcher" in out
    assert "TeamView(lead, 1 teammates, 0 pending requests)" in out
    mentra(ip, "team lead")
    assert "TeamView(lead, 1 teammates" in capsys.readouterr().out
    with pytest.raises(UsageError, match="ROLE|role"):
        mentra(ip, "teammate lead bob")


def test_rerunning_a_teammate_cell_keeps_the_teammate_and_sends_nothing_again(ip, session, capsys):
    lead = mentra(ip, "spawn lead --team")
    mentra(ip, "teammate lead alice --role researcher --prompt 'Find sources'")
    mail = session.call(lambda: lead.teammates)[0]
    capsys.readouterr()
    mentra(ip, "teammate lead alice --role researcher --prompt 'Find sources'")
    out = capsys.readouterr().out
    assert "'alice' is on lead's team already (researcher" in out and "nothing was sent again" in out
    [again] = session.call(lambda: lead.teammates)
    assert again.agent_id == mail.agent_id
    # Another role is another request: the runtime says the name is taken.
    with pytest.raises(AgentExists, match="already alive"):
        mentra(ip, "teammate lead alice --role editor")


def test_a_cell_can_register_a_tool_and_call_agent_methods_on_the_runtime_thread(ip, session):
    from mentra_nb import tool

    @tool(read_only=True)
    def row_count() -> int:
        """How many rows the data has."""
        return 120

    session.register_tool(row_count)
    agent = mentra(ip, "spawn analyst --tools row_count")
    turn = mentra(ip, "send analyst --wait how many rows?")
    assert turn.text == "Tool results: row_count returned 120"
    assert session.call(lambda: [t.spec.name for t in agent.tools()]) == ["row_count"]


REGISTER_CELL = '''from mentra_nb import tool
@tool(read_only=True)
def row_count() -> int:
    """How many rows the data has."""
    return {rows}
import mentra_nb.notebook as nb
nb.session().register_tool(row_count)
'''


def test_rerunning_a_register_tool_cell_replaces_the_tool_and_a_real_clash_says_so(ip, session):
    """Issue 15: re-running a cell that calls register_tool(fn) raised."""
    from mentra_nb import tool
    from mentra_nb.errors import ConfigError

    assert ip.run_cell(REGISTER_CELL.format(rows=120)).success
    assert ip.run_cell(REGISTER_CELL.format(rows=121)).success  # the cell again, edited
    mentra(ip, "spawn analyst --tools row_count")
    assert mentra(ip, "send analyst --wait how many rows").text == "Tool results: row_count returned 121"

    @tool(name="row_count")
    def count_rows() -> int:
        """Another function under the same tool name."""
        return 0

    with pytest.raises(ConfigError, match=r"'row_count' is already registered \(registered from "
                                          r"__main__\.row_count\).*rename it"):
        session.register_tool(count_rows)

    @tool(name="read_file")
    def read_file() -> str:
        """Clashes with a built-in tool."""
        return ""

    with pytest.raises(ConfigError, match=r"'read_file' is already registered \(a built-in tool\)"):
        session.register_tool(read_file)


def test_replacing_a_lead_closes_its_live_teammates_and_resuming_it_brings_them_back(ip, session, capsys):
    """Issue 15: `%mentra spawn NAME --replace` on a lead left its teammates running."""
    old_lead = mentra(ip, "spawn lead --team")
    mentra(ip, "teammate lead alice --role researcher --prompt 'Find sources'")
    alice = session.call(lambda: old_lead.teammate("alice"))
    deadline = time.monotonic() + 30
    while (alice.is_running or alice.snapshot.history_len == 0) and time.monotonic() < deadline:
        time.sleep(0.05)  # alice's first turn (the test model answers at once)
    alices_view = session.view(alice)
    capsys.readouterr()
    new_lead = mentra(ip, "spawn lead --team --system 'Lead anew.' --replace")
    out = capsys.readouterr().out
    assert "kept as 'lead.replaced-1'" in out
    assert "alice, working for it, stopped with it and stay stored under it" in out
    live = {a.name for a in session.runtime.agents}
    assert "alice" not in live and "lead.replaced-1" not in live
    assert session.call(lambda: new_lead.teammates) == []  # the new lead starts with no team
    # Nothing was lost: resuming the old lead revives alice, with what she did.
    mentra(ip, "resume lead.replaced-1")
    old = session.agent("lead.replaced-1")
    revived = session.call(lambda: old.teammate("alice"))
    assert revived.history[0].text == alice.history[0].text
    # Her view of the closed agent was closed with it; a new one shows the revived agent.
    assert alices_view.comm is None
    assert session.view(revived) is not alices_view and session.view(revived)._agent is revived
