"""Issue 14.2: what a saved notebook keeps of a widget (its `text/markdown`)
is exported by nbconvert as HTML; no model-, tool- or teammate-written string
may become live markup there: no script, no event handler, no javascript: link."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import nbformat
import pytest
from nbconvert import HTMLExporter

from mentra_nb import AgentConfig, Runtime, SqliteStore, tool
from mentra_nb.notebook._host import RuntimeHost
from mentra_nb.notebook._rendering import _fence, md_cell, md_code, md_text
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.notebook.team_view import TeamView
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import until

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(1)">'
LINK = "[click me](javascript:alert(1))"
AUTOLINK = "<javascript:alert(1)>"
PAYLOAD = f"Hi {SCRIPT} {IMG} {LINK} {AUTOLINK} ![x](javascript:alert(1))"


class _LiveMarkup(HTMLParser):
    """Collects every place the payload became markup rather than text."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        for name, value in attrs:
            if "alert" in (value or "") or (name.startswith("on") and value):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and "alert" in data:
            self.found.append(f"<script>{data[:80]}")


def exported(*markdowns: str) -> str:
    """The HTML nbconvert makes of a notebook whose outputs are these markdowns."""
    nb = nbformat.v4.new_notebook()
    for markdown in markdowns:
        cell = nbformat.v4.new_code_cell("view")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": markdown,
                                                                      "text/plain": "view"})]
        nb.cells.append(cell)
    body, _resources = HTMLExporter().from_notebook_node(nb)
    return body


def live_markup(html: str) -> list[str]:
    parser = _LiveMarkup()
    parser.feed(html)
    return parser.found


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
                                   "a | b\n" + SCRIPT, "```\n" + SCRIPT])
def test_the_escaping_helpers_keep_every_payload_inert(value):
    markdown = "\n\n".join([md_text(value), md_code(value), f"| x |\n|---|\n| {md_cell(value)} |",
                            _fence(value)])
    assert not live_markup(exported(markdown))
