"""Approvals in the notebook: the AgentView's approvals trait and its browser
messages, the %mentra spawn tool flags, %mentra approve / deny, and the
workspace of the session's file tools."""

from __future__ import annotations

import logging
import threading

import pytest
from IPython.core.error import UsageError

from mentra_nb import AgentError, AwaitingApproval, Runtime, tool
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.notebook.turn import Turn
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import until
from tests.notebook.conftest import mentra, mentra_cell, open_runtime

RAN: list[str] = []


@tool(requires_approval=True)
def publish(title: str) -> str:
    """Publish a report."""
    RAN.append(title)
    return f"published {title}"


@pytest.fixture
def host():
    RAN.clear()
    h = RuntimeHost()
    yield h
    h.stop()


def waiting_agent(host, *scripts, db=None):
    provider = ScriptedProvider("s", [tool_use_stream("c1", "publish", '{"title": "Q1"}'), *scripts])
    rt = open_runtime(host, lambda: Runtime.empty(providers=[provider], tools=[publish]))
    agent = host.call(lambda: rt.spawn("writer", "s:m"))
    view = AgentView(agent, host)
    future = host.submit(agent.send("publish it"))
    until(lambda: view.approvals)
    return agent, view, future, provider


def test_the_view_lists_a_paused_call_and_approve_from_the_browser_runs_it(host):
    agent, view, future, _ = waiting_agent(host, text_stream("done"))
    assert view.approvals == [{"id": "c1", "ref": "c1@1", "name": "publish", "input": '{\n  "title": "Q1"\n}'}]
    assert view.status["name"] == "executing_tool"
    assert "*waiting for approval:* `publish` (`%mentra approve` `writer` `c1@1`)" in view._markdown()
    view._on_browser_message(view, {"kind": "approve", "call_id": "c1"}, [])
    assert future.result(5).text == "done" and RAN == ["Q1"]
    host.call(lambda: None)
    assert view.approvals == []
    assert "waiting for approval" not in view._markdown()


def test_deny_from_the_browser_sends_the_reason_to_the_model(host):
    agent, view, future, provider = waiting_agent(host, text_stream("ok, not publishing"))
    view._on_browser_message(view, {"kind": "deny", "call_id": "c1", "reason": "numbers not final"}, [])
    assert future.result(5).text == "ok, not publishing" and RAN == []
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error and "(numbers not final)" in result.content


def test_always_allow_from_the_browser_is_remembered_for_the_agent(host):
    agent, view, future, _ = waiting_agent(
        host, tool_use_stream("c2", "publish", '{"title": "Q2"}'), text_stream("both out"))
    view._on_browser_message(view, {"kind": "approve", "call_id": "c1", "always": True}, [])
    assert future.result(5).text == "both out" and RAN == ["Q1", "Q2"]
    assert agent.always_allowed_tools == ["publish"]


def test_invalid_or_stale_approval_messages_are_logged_and_ignored(host, caplog):
    agent, view, future, _ = waiting_agent(host, text_stream("done"))
    with caplog.at_level(logging.WARNING, logger="mentra_nb.notebook"):
        for junk in [{"kind": "approve"}, {"kind": "approve", "call_id": ""},
                     {"kind": "deny", "call_id": "c1", "reason": "x" * 5000},
                     {"kind": "approve", "call_id": "c1", "always": "yes please"}]:
            view._on_browser_message(view, junk, [])
        view._on_browser_message(view, {"kind": "approve", "call_id": "zzz"}, [])
        host.call(lambda: None)
    assert len([r for r in caplog.records if "ignored an invalid message" in r.message]) == 4
    assert any("has no call 'zzz' waiting" in r.getMessage() for r in caplog.records)
    assert not future.done() and RAN == []
    host.call(lambda: agent.approve("c1"))
    assert future.result(5).text == "done"


# --- magics and the session ---------------------------------------------------------

def test_the_session_registers_file_and_kernel_tools_but_not_python_or_shell(ip, session):
    names = [t.spec.name for t in session.runtime.tools]
    assert names == ["read_file", "list_dir", "glob", "grep", "write_file", "edit_file",
                     "list_variables", "describe_variable", "notebook_cells", "view_figure"]


def test_the_offline_test_model_is_offered_builtin_tools_only_by_name(ip, session):
    plain = mentra(ip, "spawn plain")
    assert set(plain.config.hidden_tools) == {t.spec.name for t in session.runtime.tools}
    assert mentra(ip, "send plain --wait hi").text == "You said: hi"
    chosen = mentra(ip, "spawn chosen --tools list_variables")
    assert chosen.config.hidden_tools == [] and chosen.config.tools == ["list_variables"]
    ip.user_ns["sales"] = [1, 2, 3]
    assert mentra(ip, "send chosen --wait look").text == "Tool results: list_variables returned sales: list (len 3)"


def test_spawn_flags_enable_python_and_set_the_policy(ip, session):
    agent = mentra(ip, "spawn analyst --model test --python --read-only --auto-approve write_file,python")
    assert "python" in [t.spec.name for t in session.runtime.tools]
    assert "shell" not in [t.spec.name for t in session.runtime.tools]
    assert agent.config.read_only and agent.config.auto_approve == ["write_file", "python"]
    assert "python" not in agent.config.hidden_tools  # asked for by name
    assert "python" not in [t.spec.name for t in agent.tools()]  # but read_only hides it
    mentra(ip, "spawn ops --shell")
    assert "shell" in [t.spec.name for t in session.runtime.tools]
    assert session.enable_tool("shell") is False  # already there


def test_approve_and_deny_magics_answer_a_paused_python_call(ip, session):
    agent = mentra(ip, "spawn coder --python --tools python")
    turn = mentra(ip, "send coder write some code")
    until(lambda: agent.snapshot.pending_approvals)
    [pending] = agent.snapshot.pending_approvals
    assert pending.tool_name == "python"
    with pytest.raises(AgentError, match="has no call 'nope' waiting"):
        mentra(ip, "approve coder nope")
    mentra(ip, f"deny coder {pending.tool_use_id} --reason 'not now'")
    assert "denied this call of 'python'" in turn.result(5).text
    with pytest.raises(UsageError, match="CALL_ID is missing"):
        mentra(ip, "approve coder")


def test_without_a_kernel_a_waiting_cell_stops_at_a_call_waiting_for_approval(ip, session, capsys):
    """Issue 29.4 where nothing can answer a view while the cell waits (this plain IPython
    shell, like ipykernel 6): the wait stops at the approval and says how to go on,
    instead of waiting for an answer that cannot come."""
    agent = mentra(ip, "spawn coder --python --tools python")
    # The old code waited for ever: a denial after 30 s makes it fail here instead.
    rescue = threading.Timer(30, lambda: [session.deny(agent, p.reference)
                                          for p in agent.snapshot.pending_approvals])
    rescue.start()
    try:
        turn = mentra_cell(ip, "coder --wait", "write some code")
        assert isinstance(turn, Turn)
        [pending] = agent.snapshot.pending_approvals
        assert capsys.readouterr().out.splitlines()[-1] == (
            f"mentra: 'coder' waits for your approval of python ({pending.reference}) in its view (or "
            f"%mentra approve coder {pending.reference}); the cell stopped waiting: the turn goes on, "
            "and turn.result() gives its answer")
        mentra(ip, f"deny coder {pending.reference} --reason 'not now'")
        assert "denied this call of 'python'" in turn.result(5).text
        # turn.result() itself, as a Python cell calls it.
        later = mentra(ip, "send coder write more code")
        with pytest.raises(AwaitingApproval, match="'coder' waits for your approval of python"):
            later.result(30)
    finally:
        rescue.cancel()
    [pending] = agent.snapshot.pending_approvals
    mentra(ip, f"deny coder {pending.reference}")
    assert "denied this call of 'python'" in later.result(5).text


def test_an_old_approve_cell_rerun_never_approves_a_later_runs_call(ip, session):
    """Issue 14.9: the cell names the call with its run, CALL_ID@RUN."""
    agent = mentra(ip, "spawn coder --python --tools python")
    first = mentra(ip, "send coder write some code")
    until(lambda: agent.snapshot.pending_approvals)
    [pending] = agent.snapshot.pending_approvals
    old_cell = f"deny coder {pending.reference} --reason 'not now'"
    mentra(ip, old_cell)
    first.result(5)
    second = mentra(ip, "send coder write more code")
    until(lambda: agent.snapshot.pending_approvals)
    [later] = agent.snapshot.pending_approvals
    assert later.run_generation > pending.run_generation
    with pytest.raises(AgentError, match="no call .* waiting for approval"):
        mentra(ip, old_cell.replace("deny", "approve").split(" --reason")[0])
    assert agent.snapshot.pending_approvals == [later]
    mentra(ip, f"deny coder {later.reference}")
    assert "denied this call of 'python'" in second.result(5).text


def test_the_workspace_is_the_notebooks_folder(ip, tmp_path, monkeypatch):
    import mentra_nb.notebook as notebook

    folder = tmp_path / "analysis"
    folder.mkdir()
    (folder / "notes.md").write_text("inside\n")
    monkeypatch.setenv("JPY_SESSION_NAME", str(folder / "report.ipynb"))
    session = notebook.NotebookSession(ip.user_ns)
    try:
        assert session.workspace == folder
        assert session.runtime.workspace.root == folder.resolve()
    finally:
        session.close()


def test_resume_after_a_frozen_kernel_says_the_call_waiting_for_approval_was_not_run(ip, session, capsys):
    import mentra_nb.notebook as notebook
    from mentra_nb import APPROVAL_INTERRUPTED_RESULT

    agent = mentra(ip, "spawn coder --python --tools python")
    mentra(ip, "send coder write some code")
    until(lambda: agent.snapshot.pending_approvals)
    # A dead kernel runs no cleanup: stop its loop where it stands and forget the session.
    session.host.stop()
    ip._mentra_session = None
    notebook.load_ipython_extension(ip)
    capsys.readouterr()

    mentra(ip, "resume --python")
    out = capsys.readouterr().out
    assert "'coder' was waiting for your approval when the kernel stopped; that call was not run" in out
    revived = notebook.session(ip).agent("coder")
    assert revived.status.name == "interrupted"
    assert revived.history[-1].tool_results[0].content == APPROVAL_INTERRUPTED_RESULT
    new = notebook.session(ip)
    reply = new.host.submit(revived.resume()).result(10)  # continues the turn
    assert reply.text == f"Tool results: python failed {APPROVAL_INTERRUPTED_RESULT}"


def test_list_shows_a_teammates_call_waiting_for_approval(ip, session, capsys):
    """Issue 16.1: a teammate without a view of its own does not wait unseen."""
    mentra(ip, "spawn lead --python --tools python")
    mentra(ip, "teammate lead alice --role coder --prompt 'write some code'")
    alice = session.call(lambda: session.agent("lead").teammate("alice"))
    until(lambda: alice.snapshot.pending_approvals)
    [pending] = alice.snapshot.pending_approvals
    capsys.readouterr()
    mentra(ip, "list")
    out = capsys.readouterr().out
    assert (f"waiting for approval: python  (%mentra approve alice {pending.reference}, or "
            "%mentra deny)") in out
    mentra(ip, f"approve alice {pending.reference}")
    until(lambda: not alice.snapshot.pending_approvals)
    mentra(ip, "list")
    assert "waiting for approval" not in capsys.readouterr().out
