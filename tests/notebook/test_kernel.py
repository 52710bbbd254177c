"""A real ipykernel through jupyter_client: stream, kill -9 mid-stream, restart, resume.

Each kernel runs in a temporary folder with `JPY_SESSION_NAME` naming a
notebook there, exactly as a Jupyter server starts it, so the state file is
found beside the notebook. Kernels are shut down even when a test fails.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from mentra_nb.notebook.agent_view import LIVE_WINDOW

pytestmark = pytest.mark.process

SLOW_PROVIDER = (
    "import mentra_nb.notebook as nb\n"
    "from mentra_nb.providers.test import TestProvider\n"
    "nb.session().runtime.providers.register(TestProvider(name='slow', chunk_delay={delay}))\n"
)


def _pending_text(db: Path) -> str:
    if not db.exists():
        return ""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT pending_turn FROM agents WHERE pending_turn IS NOT NULL").fetchone()
    except sqlite3.Error:
        return ""
    finally:
        conn.close()
    return json.loads(row[0])["current_text"] if row else ""


def test_kill_minus_nine_mid_stream_then_resume_in_a_new_kernel(kernels, tmp_path):
    db = tmp_path / ".mentra" / "analysis.sqlite"
    first = kernels()
    first.run("%load_ext mentra_nb")
    first.run(SLOW_PROVIDER.format(delay=0.05))
    first.run("%mentra spawn writer --model slow:m")
    assert "You said: warm up" in first.run("%mentra send writer --wait warm up\n"
                                              "print(nb.session().agent('writer').history[-1].text)")
    first.run("%%mentra writer\n" + " ".join(f"word{i}" for i in range(400)))  # returns at once
    deadline = time.monotonic() + 30
    while len(_pending_text(db)) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    cut_at = _pending_text(db)
    assert cut_at.startswith("You said: word0"), cut_at
    first.kill_hard()

    second = kernels()
    second.run("%load_ext mentra_nb")
    out = second.run("%mentra resume")
    assert "mentra: resumed 'writer', 2 messages, interrupted" in out
    # (a full view's cell: the conversation as markdown, then the widget)
    assert "**writer** · `slow:m` · interrupted" in out and "You said: warm up" in out
    state = second.run(
        "import mentra_nb.notebook as nb\n"
        "agent = nb.session().agent('writer')\n"
        "print([m.text for m in agent.history]); print(agent.resumable_turn.text[:12])"
    )
    assert "['warm up', 'You said: warm up']" in state and "word0 word1 " in state
    second.run(SLOW_PROVIDER.format(delay=0))
    assert "You said: after the restart" in second.run(
        "%mentra send writer --wait after the restart\nprint(agent.history[-1].text)")


def test_comm_traffic_for_a_5000_delta_stream_stays_small(kernels, tmp_path):
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    kernel.run(SLOW_PROVIDER.format(delay=0.0005))
    kernel.run("%mentra spawn writer --model slow:m")
    # As a browser view does when it opens: from then on the transcript is sent too. The
    # greetings (this hello's, and the spawn cell's display's) are sent from the runtime's
    # thread: waiting for it there makes them go out before this cell ends, not into the
    # traffic counted below.
    kernel.run("view = nb.session().view(nb.session().agent('writer'))\n"
               "view._on_browser_message(view, {'kind': 'hello'}, [])\n"
               "nb.session().host.call(lambda: None)")
    comm_messages: list[int] = []
    user_item_bytes: list[int] = []  # the prompt, shown once as a transcript item
    live_overheads: list[int] = []  # what each live-text message adds to its text
    parents: list[dict] = []

    def count(msg: dict) -> None:
        data = msg["content"].get("data", {})
        if msg["msg_type"] == "comm_msg" and data.get("method") == "custom":
            parents.append(msg["parent_header"])
            size = len(json.dumps(data))
            content = data["content"]
            if content.get("kind") == "items" and all(i["role"] == "user" for i in content["items"]):
                user_item_bytes.append(size)
            else:
                comm_messages.append(size)
            if "t" in content:
                live_overheads.append(size - len(json.dumps(content["t"])))

    prompt = " ".join(f"w{i}" for i in range(4998))  # the reply streams 5,000 word deltas
    started = time.monotonic()
    # Every iopub message, not only those whose parent is the cell (execute_interactive's
    # output hook): custom messages are published without a parent header.
    request = kernel.client.execute(
        f"turn = nb.session().send(nb.session().agent('writer'), {prompt!r}); turn.result(120)")
    deadline = time.monotonic() + 180
    while True:
        msg = kernel.client.get_iopub_msg(timeout=max(1, deadline - time.monotonic()))
        count(msg)
        if msg["msg_type"] == "status" and msg["parent_header"].get("msg_id") == request \
                and msg["content"]["execution_state"] == "idle":
            break
    seconds = time.monotonic() - started
    # Messages still in flight after the cell finished:
    while True:
        try:
            count(kernel.client.get_iopub_msg(timeout=1))
        except Exception:
            break
    assert parents and all(parent == {} for parent in parents)
    text_bytes = len(("You said: " + prompt).encode())
    sent_bytes = sum(comm_messages)
    print(f"\n5,000-delta stream: {seconds:.2f} s, {len(comm_messages)} custom comm messages "
          f"({len(comm_messages) / seconds:.1f}/s), {sent_bytes} bytes for {text_bytes} bytes of text "
          f"({sent_bytes / text_bytes:.2f}x)")
    # Live text at most once a window (issue 32: the reader sees it within one), and the
    # turn's few other messages: the prompt, the commit.
    assert len(live_overheads) <= seconds / LIVE_WINDOW + 1
    assert len(comm_messages) + len(user_item_bytes) <= len(live_overheads) + 5
    # Each live message's own JSON around its text is short keys and a sequence number:
    # {"method": "custom", "content": {"s": 12, "t": ...}} (the rest of the envelope is Jupyter's).
    assert live_overheads and max(live_overheads) <= len('{"method": "custom", "content": {"s": 12345, "t": }}')
    assert sent_bytes <= 1.5 * text_bytes  # the reply crosses the wire once, not streamed + committed
    assert len(user_item_bytes) == 1 and user_item_bytes[0] <= 1.2 * len(prompt)


def test_a_views_messages_go_with_a_four_byte_topic(kernels):
    """Issue 32: every message a view's comm sent after its opening carried ipykernel's
    IOPub topic, "comm-" and the comm's id (37 bytes, the id again that its content
    carries), on messages that are ~420 bytes of envelope besides their text."""
    from mentra_nb.notebook._widget import COMM_TOPIC
    from tests.kernels import IopubTap

    kernel = kernels()
    tap = IopubTap(kernel.manager.get_connection_info())
    try:
        deadline = time.monotonic() + 30
        while not tap.messages and time.monotonic() < deadline:  # (until the subscriber has joined)
            kernel.run("pass")
        kernel.run("%load_ext mentra_nb")
        kernel.run(SLOW_PROVIDER.format(delay=0.01))
        kernel.run("%mentra spawn writer --model slow:m")
        start = tap.mark()
        kernel.run("%mentra send writer --wait say a few words\nnb.session().host.call(lambda: None)")
        sent = [(content, idents) for _t, kind, _n, content, idents in tap.messages[start:]
                if kind == "comm_msg"]
    finally:
        tap.close()
    kinds = {content["data"]["method"] for content, _idents in sent}
    assert kinds == {"custom", "update"}  # the live text and the transcript, and the status
    assert {tuple(idents) for _content, idents in sent} == {(b"comm",)} == {(COMM_TOPIC,)}


def test_a_spawn_cell_reruns_in_the_same_and_a_restarted_kernel(kernels, tmp_path):
    """Issue 15.1: rerunning `%mentra spawn writer` (or Restart and Run All) failed
    with AgentExists and the view vanished from the cell."""
    spawn = "writer = %mentra spawn writer --system 'Be brief.'\nwriter"
    first = kernels()
    first.run("%load_ext mentra_nb")
    assert "**writer** · `test:default` · idle\nAgentView(writer)" in first.run(spawn)
    first.run("%mentra send writer --wait remember the tide pools")
    again = first.run(spawn)  # same kernel
    assert "**writer** · `test:default` · finished" in again and "You said: remember the tide pools" in again
    first.close()

    second = kernels()
    second.run("%load_ext mentra_nb")
    out = second.run(spawn)
    assert "mentra: 'writer' was stored: attached to it (2 messages, finished)" in out
    assert "**writer** · `test:default` · finished" in out and "You said: remember the tide pools" in out
    assert "remember the tide pools" in second.run("print(writer.history[0].text)")
    # Other settings: it says what differs and how to start over; --replace does.
    text, errors, _status = second.execute("%mentra spawn writer --system 'Be long.'")
    assert [e["ename"] for e in errors] == [] and "AgentExists: 'writer' is stored with other settings" \
        " (system 'Be brief.', not 'Be long.')" in text and "--replace" in text
    out = second.run("%mentra spawn writer --system 'Be long.' --replace\n%mentra list")
    assert "the earlier 'writer' is kept as 'writer.replaced-1'" in out
    assert "writer.replaced-1" in out and "2 messages" in out


def test_wait_returns_the_reply_and_the_cell_shows_only_its_turn(kernels, tmp_path):
    """Issue 15.2: `--wait` returned `Turn(writer, run 2)`, and every cell showed
    the whole conversation."""
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    kernel.run("%mentra spawn writer")
    kernel.run("%mentra send writer --wait first question")
    messages: list[dict] = []
    kernel.client.execute_interactive("%%mentra writer --wait\nsecond question", timeout=60,
                                      output_hook=messages.append)
    [shown] = [m for m in messages if m["msg_type"] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in shown["content"]["data"]
    assert shown["content"]["data"]["text/plain"] == "AgentView(writer, turn 2)"
    display_id = shown["content"]["transient"]["display_id"]
    # When the turn ended, the cell's view became the turn's static transcript.
    [update] = [m for m in messages if m["msg_type"] == "update_display_data"
                and m["content"]["transient"]["display_id"] == display_id]
    markdown = update["content"]["data"]["text/markdown"]
    assert "second question" in markdown and "You said: second question" in markdown
    assert "first question" not in markdown  # this turn only
    assert update["content"]["data"]["text/plain"] == "AgentView(writer, turn 2, finished, 2 messages)"
    # The cell's result is the reply's text, and the Turn is reachable from it.
    [result] = [m for m in messages if m["msg_type"] == "execute_result"]
    assert result["content"]["data"]["text/plain"] == "You said: second question"
    assert kernel.run("print(type(_).__name__, _.turn)").strip() == "Reply Turn(writer, run 2)"
    # The whole conversation is one command away.
    whole = kernel.run("%mentra show writer")
    assert "You said: first question" in whole and "You said: second question" in whole


def test_a_full_view_keeps_its_static_transcript_up_to_date_above_the_widget(kernels, tmp_path):
    """Issue 15.7: a spawn / show cell's saved output reads as the conversation at
    its last turn's end, and the live widget's own output holds no second copy."""
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    messages: list[dict] = []
    kernel.client.execute_interactive("writer = %mentra spawn writer\nwriter", timeout=60,
                                      output_hook=messages.append)
    fallback, widget = [m for m in messages if m["msg_type"] == "display_data"]
    markdown = fallback["content"]["data"]["text/markdown"]
    assert markdown.startswith("**writer**")  # plain markdown: no wrapper (issue 36.6)
    assert "application/vnd.jupyter.widget-view+json" not in fallback["content"]["data"]
    assert "application/vnd.jupyter.widget-view+json" in widget["content"]["data"]
    assert widget["content"]["data"]["text/markdown"] == ""
    display_id = fallback["content"]["transient"]["display_id"]

    # A turn sent from another cell: when it ends, the spawn cell's copy is replaced.
    later: list[dict] = []
    kernel.client.execute_interactive("%mentra send writer --wait What lives in a tide pool",
                                      timeout=60, output_hook=later.append)
    updates = [m for m in later if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    assert updates, "the spawn cell's static transcript was not refreshed at the turn's end"
    refreshed = updates[-1]["content"]["data"]["text/markdown"]
    assert "You said: What lives in a tide pool" in refreshed and "finished" in refreshed


TEAM_AND_TREE_MODELS = """
import time
import mentra_nb.notebook as nb
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
on_loop = nb.session().host.call
for provider in [
    ScriptedProvider("lead_model", []),
    ScriptedProvider("alice_model", [text_stream("Three facts found.")]),
    ScriptedProvider("boss_model", [
        tool_use_stream("c1", "spawn_agent",
                        '{"task_name": "research", "message": "Do research.", "model": "research_model:s"}'),
        tool_use_stream("w1", "wait_agent", '{"timeout_ms": 30000}'),
        text_stream("Done."),
    ]),
    ScriptedProvider("research_model", [text_stream("Sea stars regrow arms.")]),
]:
    nb.session().runtime.providers.register(provider)

def until(condition):
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    on_loop(lambda: None)  # whatever the runtime thread was publishing is out
"""


def _fallback_and_widget(messages: list[dict], label: str) -> tuple[str, dict]:
    """The display id of the markdown copy a live view cell showed, and the widget's data."""
    shown = [m for m in messages if m["msg_type"] == "display_data"]
    fallback, widget = shown[-2:]
    assert fallback["content"]["data"]["text/markdown"].startswith("**")
    assert "application/vnd.jupyter.widget-view+json" not in fallback["content"]["data"]
    data = widget["content"]["data"]
    assert "application/vnd.jupyter.widget-view+json" in data and data["text/markdown"] == ""
    assert data["text/plain"] == f"{label} · live view; saved as the markdown above"
    return fallback["content"]["transient"]["display_id"], data


def _updates(messages: list[dict], display_id: str) -> list[str]:
    return [m["content"]["data"]["text/markdown"] for m in messages
            if m["msg_type"] == "update_display_data" and m["content"]["transient"]["display_id"] == display_id]


def test_a_team_view_and_a_picker_keep_their_static_markdown_up_to_date_above_the_widget(kernels):
    """Issue 15.7 for the TeamView and the subagent picker: saved as markdown above
    the widget, refreshed as the team and the tree change (not per streamed token)."""
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    kernel.run(TEAM_AND_TREE_MODELS)

    messages: list[dict] = []
    kernel.client.execute_interactive("lead = %mentra spawn lead --model lead_model:scripted --team\n"
                                      "%mentra team lead", timeout=60, output_hook=messages.append)
    team_id, _ = _fallback_and_widget(messages, "TeamView(lead)")
    later: list[dict] = []
    kernel.client.execute_interactive(
        # Not `%mentra teammate`, which shows the team again (and so brings older copies up to date).
        "nb.session().host.submit(lead.spawn_teammate('alice', 'researcher', 'Find facts.',"
        " model='alice_model:scripted')).result(60)\n"
        "view = nb.session().team_view(lead)\n"
        "until(lambda: all('| alice | researcher | idle |' in md for md in view._fallbacks.values()))",
        timeout=90, output_hook=later.append)
    updates = _updates(later, team_id)
    assert updates, "the team cell's markdown was not refreshed when a teammate joined"
    assert "| alice | researcher | idle |" in updates[-1]
    assert len(updates) < 10  # at the team's changes, not per delta

    messages = []
    kernel.client.execute_interactive("boss = %mentra spawn boss --model boss_model:scripted --subagents\n"
                                      "%mentra subagents boss", timeout=60, output_hook=messages.append)
    picker_id, _ = _fallback_and_widget(messages, "SubagentPickerView(boss)")
    later = []
    kernel.client.execute_interactive(
        "%mentra send boss --wait Write the post.\n"
        "picker = nb.session().picker(boss)\n"
        "until(lambda: all('completed' in md for md in picker._fallbacks.values()))",
        timeout=90, output_hook=later.append)
    updates = _updates(later, picker_id)
    assert updates, "the picker cell's markdown was not refreshed as the tree changed"
    assert "`/root/research`" in updates[-1] and "completed" in updates[-1]
    assert "1 subagents" in updates[-1]
