"""Issue 14.2: what a saved notebook keeps of a widget (its `text/markdown`)
is exported by nbconvert as HTML; no model-, tool- or teammate-written string
may become live markup there: no script, no event handler, no javascript: link."""

from __future__ import annotations

import json

import pytest

from mentra_nb import AgentConfig, ContentBlock, Message, Runtime, SqliteStore, tool
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook._rendering import _fence, md_cell, md_code, md_text, transcript_markdown
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.notebook.team_view import TeamView
from mentra_nb.runtime._export import ExportHeader, export_transcript
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import until
from tests.saved_markup import gfm, live_markup, nbconvert_file, nbconvert_notebook, visible_words

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(1)">'
LINK = "[click me](javascript:alert(1))"
AUTOLINK = "<javascript:alert(1)>"
PAYLOAD = f"Hi {SCRIPT} {IMG} {LINK} {AUTOLINK} ![x](javascript:alert(1))"


def exported(*markdowns: str) -> str:
    return nbconvert_notebook(*markdowns)


@pytest.fixture
def host():
    h = RuntimeHost()
    yield h
    h.stop()


def test_the_probe_sees_live_markup_in_unescaped_markdown():
    """The check below can fail: raw model text in markdown does become live HTML."""
    assert len(live_markup(exported(PAYLOAD))) >= 3


def test_an_agent_views_saved_markdown_is_inert(host, db_path):
    @tool(read_only=True)
    def fetch() -> str:
        """Fetch a page."""
        return f"page says {SCRIPT}"

    unclosed = f"Look:\n```\ncode {SCRIPT}"
    provider = ScriptedProvider("s", [tool_use_stream("c1", "fetch", "{}"), text_stream(unclosed),
                                      text_stream(PAYLOAD), text_stream("done")])
    rt = host.call(lambda: Runtime.empty(store=SqliteStore(db_path), providers=[provider], tools=[fetch]))
    agent = host.call(lambda: rt.spawn("writer", "s:m"))
    host.submit(agent.send(f"hello {IMG}")).result(30)
    inbox = json.dumps([{"type": "message", "from": IMG, "content": SCRIPT + LINK}])
    host.submit(agent.send(f"<team-inbox>{inbox}</team-inbox>")).result(30)
    host.submit(agent.send("again")).result(30)
    markdown = AgentView(agent, host)._repr_mimebundle_()[0]["text/markdown"]
    assert "javascript:alert(1)" in markdown  # the text is kept, as text
    html = exported(markdown)
    assert not live_markup(html), live_markup(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_team_views_saved_markdown_is_inert(host, db_path):
    plan = json.dumps({"to": "lead", "protocol": "plan_approval", "content": PAYLOAD})
    provider = ScriptedProvider("anthropic", [tool_use_stream("r1", "team_request", plan),
                                              text_stream("Waiting for approval")])
    rt = host.call(lambda: Runtime.empty(store=SqliteStore(db_path), providers=[provider]))
    lead = host.call(lambda: rt.spawn("lead", "anthropic:m", config=AgentConfig(team=True)))
    view = TeamView(lead, host)
    host.submit(lead.spawn_teammate("alice", f"researcher {IMG} | {SCRIPT}", "Plan")).result(5)
    until(lambda: view.requests and view.members)
    markdown = view._repr_mimebundle_()[0]["text/markdown"]
    html = exported(markdown)
    assert not live_markup(html), live_markup(html)


@pytest.mark.parametrize("value", [SCRIPT, IMG, LINK, AUTOLINK, "`` ` ``<script>alert(1)</script>",
                                   "a | b\n" + SCRIPT, "```\n" + SCRIPT,
                                   "m|" + IMG, "$$|" + IMG + "|$$"])
def test_the_escaping_helpers_keep_every_payload_inert(value):
    markdown = "\n\n".join([md_text(value), md_code(value), f"| x |\n|---|\n| {md_cell(value)} |",
                            f"| x | y |\n|---|---|\n| {md_code(value, in_table=True)} | y |", _fence(value)])
    assert not live_markup(exported(markdown))
    assert not live_markup(gfm(markdown))


# Issue 33.1-2: model text that made the old escaping believe a fence was open
# (a reply opening with one, as the old `md_text` saw each string on its own),
# or that ended a line with `\r`, which CommonMark also reads as a line end.
FENCED = "```\n" + SCRIPT
HOSTILE_MESSAGES = [
    Message.user("Go"),
    Message.assistant(ContentBlock.text(FENCED)),
    Message.assistant(ContentBlock.thinking(FENCED)),
    Message.assistant(ContentBlock.text("Look:\n```\ncode\r```\r" + SCRIPT)),
    Message.assistant(ContentBlock.tool_use("t1", "lookup\r" + SCRIPT, {"q": 1})),
    Message.user(ContentBlock.tool_result("t1", "done", images=[ContentBlock.image(FENCED, "AAAA")])),
    Message.user('<subagent_update id="m1" agent="/root/a" status="completed">' + FENCED + "</subagent_update>"),
    Message.user("<team-inbox>" + json.dumps([{"type": "message", "from": FENCED, "content": "hi"}])
                 + "</team-inbox>"),
]


@pytest.mark.parametrize("message", HOSTILE_MESSAGES[1:], ids=["reply", "thinking", "cr-lines", "tool-name",
                                                               "image-type", "subagent-update", "inbox-from"])
def test_model_text_that_opens_a_fence_or_ends_lines_with_cr_stays_inert(message):
    markdown = transcript_markdown([message])
    for html in (exported(markdown), gfm(markdown)):
        assert not live_markup(html), (markdown, live_markup(html))
        assert {"script", "alert"} <= visible_words(html)  # still there, as text


def test_a_reply_opening_with_a_fence_shows_it_as_code_under_its_label():
    markdown = transcript_markdown([Message.assistant(ContentBlock.text("```python\nprint(1)\n```\nafter"))])
    assert markdown == "**assistant**:\n\n```python\nprint(1)\n```\n\nafter"


def test_an_exported_notebook_keeps_model_text_inert(tmp_path):
    """Issue 33.3: `agent.export("ipynb")` wrote model text into markdown cells as it came."""
    header = ExportHeader(name="writer", agent_id="a1", model="anthropic:m")
    messages = [*HOSTILE_MESSAGES, Message.assistant(ContentBlock.text(PAYLOAD))]
    export_transcript(header, messages, "ipynb", tmp_path / "t.ipynb")
    html = nbconvert_file(str(tmp_path / "t.ipynb"))
    assert not live_markup(html), live_markup(html)
    markdown = export_transcript(header, messages, "markdown")
    assert not live_markup(gfm(markdown)), live_markup(gfm(markdown))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
