"""TeamView and SubagentPicker in a real JupyterLab.

The agents run on scripted models (mentra_nb.testing) registered from a cell,
one provider per member, so each member's replies come in a fixed order
whatever the timing between members; everything else is the real runtime.
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.notebook_page import poll

SETUP = "%load_ext mentra_nb\nimport mentra_nb.notebook as nb\non_loop = nb.session().host.call"

# Records every distinct text an element takes (by CSS selector), in order.
RECORD_TEXTS = """(selector) => {
  window.__seen = window.__seen || {};
  const seen = window.__seen[selector] = [];
  const record = () => {
    const node = document.querySelector(selector);
    const value = node ? `${node.textContent}|${node.dataset.tone ?? node.dataset.status ?? ""}` : null;
    if (value !== null && seen[seen.length - 1] !== value) seen.push(value);
  };
  new MutationObserver(record).observe(document.body,
    {subtree: true, childList: true, characterData: true, attributes: true});
  record();
}"""

TEAM_MODELS = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

def slow(script, delay=0.15):
    script.delay = delay  # each event waits: the member stays "working" long enough to see
    return script

alice_model = ScriptedProvider("alice_model", [
    slow(tool_use_stream("a1", "team_request",
         '{"to": "lead", "protocol": "plan_approval", "content": "Read the tide pool guide."}')),
    text_stream("Waiting for approval."),
    slow(tool_use_stream("a2", "team_send", '{"to": "lead", "content": "Three facts found."}')),
    text_stream("Reported."),
])
nb.session().runtime.providers.register(alice_model)
nb.session().runtime.providers.register(ScriptedProvider("lead_model", []))
'''


def test_teammate_status_changes_live_and_approve_reaches_the_kernel(notebook):
    nb = notebook.open([
        SETUP,
        TEAM_MODELS,
        "lead = %mentra spawn lead --model lead_model:scripted --team\n%mentra team lead",
        "%mentra teammate lead alice --role researcher --model alice_model:scripted"
        " --prompt 'Find three facts.'",
    ])
    nb.run_all(3)
    team = nb.output(2).locator(".mentra-team")
    expect(team.locator(".mentra-empty")).to_have_text("no teammates yet")
    alice_badge = '.jp-Cell:nth-child(3) .mentra-team li[data-name="alice"] .mentra-badge'
    nb.page.evaluate(RECORD_TEXTS, alice_badge)

    nb.run_cell(3)
    alice = team.locator('li[data-name="alice"]')
    expect(alice.locator(".mentra-model")).to_have_text("researcher")
    request = nb.output(3).locator(".mentra-team .mentra-request")  # in the newest view of the team
    expect(request.locator(".mentra-name")).to_have_text("plan_approval from alice")
    expect(request.locator("pre")).to_have_text("Read the tide pool guide.")
    expect(alice.locator(".mentra-badge")).to_have_text("idle")
    expect(team.locator(".mentra-header .mentra-usage")).to_have_text("1 unread")

    request.locator("button.mentra-approve").click()
    expect(request).to_have_count(0)
    expect(team.locator(".mentra-header .mentra-usage")).to_have_text("2 unread")
    expect(alice.locator(".mentra-badge")).to_have_text("idle")

    statuses = [value.split("|")[0] for value in nb.page.evaluate(f"window.__seen[{alice_badge!r}]")]
    assert statuses.count("working") >= 2, f"alice's badge went {statuses}"
    assert statuses[-1] == "idle"
    answered = nb.kernel.value(
        "[(r.protocol, r.status, r.sender) for r in on_loop(lambda: lead.team_requests(None))]")
    assert answered == [["plan_approval", "approved", "alice"]]
    assert nb.kernel.value("len(alice_model.requests)") == 4  # woken by the approval, then reported
    assert nb.kernel.value("[t.status.name for t in on_loop(lambda: lead.teammates)]") == ["idle"]


SUBAGENT_MODELS = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

def spawn(task):
    return (f"call_{task}", "spawn_agent",
            f'{{"task_name": "{task}", "message": "Do {task}.", "model": "{task}_model:s"}}')

waits = [tool_use_stream(f"wait_{n}", "wait_agent", '{"timeout_ms": 30000}') for n in range(5)]
lead_model = ScriptedProvider("lead_model", [
    tool_use_stream(*spawn("research"), calls=[spawn("title"), spawn("images")]),
    *waits,
    text_stream("First draft done."),
    # The second message: one more turn for research.
    tool_use_stream("again", "followup_task", '{"target": "research", "message": "One more fact."}'),
    *[tool_use_stream(f"wait_again_{n}", "wait_agent", '{"timeout_ms": 30000}') for n in range(3)],
    text_stream("Second draft done."),
])
providers = [
    lead_model,
    ScriptedProvider("research_model", [text_stream("Sea stars regrow arms.", chunks=5, delay=0.2),
                                        text_stream("Hermit crabs swap shells.", chunks=5, delay=0.1)]),
    ScriptedProvider("title_model", [text_stream("Tiny Oceans", chunks=5, delay=0.2)]),
    ScriptedProvider("images_model", [text_stream("photo " * 400, chunks=400, delay=0.2)]),
]
for provider in providers:
    nb.session().runtime.providers.register(provider)
from mentra_nb.runtime import subagents
def tree():
    return {c.name: c.status for c in on_loop(lambda: subagents.list_subagents(lead))}
'''


def test_subagent_picker_counts_children_previews_pages_back_and_interrupts(notebook):
    nb = notebook.open([
        SETUP,
        SUBAGENT_MODELS,
        "lead = %mentra spawn lead --model lead_model:scripted --subagents\n%mentra subagents lead",
        "first = %mentra send lead Write the post.",
        "second = %mentra send lead Add a fact.",
    ])
    nb.run_all(3)
    picker = nb.output(2).locator(".mentra-picker")
    expect(picker.locator(".mentra-empty")).to_have_text("no subagents yet")
    badge = ".jp-Cell:nth-child(3) .mentra-picker .mentra-count"
    nb.page.evaluate(RECORD_TEXTS, badge)

    nb.run_cell(3)
    rows = picker.locator("li.mentra-clickable")
    expect(rows).to_have_count(3)
    images = picker.locator('li[data-path="/root/images"]')
    expect(picker.locator('li[data-path="/root/research"] .mentra-badge')).to_have_text(
        "completed")
    expect(images.locator(".mentra-badge")).to_have_text("running")
    images.locator("button.mentra-interrupt").click()
    expect(images.locator(".mentra-badge")).to_have_text("interrupted")
    expect(images.locator("button.mentra-interrupt")).to_have_count(0)
    poll(lambda: nb.kernel.value("first.done()"), message="the lead's first run")
    assert nb.kernel.value("tree()") == {
        "images": "interrupted", "research": "completed", "title": "completed"}
    seen = nb.page.evaluate(f"window.__seen[{badge!r}]")
    assert "3|active" in seen, f"the badge went {seen}"  # counted while children ran
    assert not seen[-1].endswith("|active"), f"the badge went {seen}"

    nb.run_cell(4)  # the lead asks research for one more turn
    poll(lambda: nb.kernel.value("second.done()"), message="the lead's second run")
    picker.locator('li[data-path="/root/research"] .mentra-name').click()
    preview = picker.locator(".mentra-preview")
    expect(preview.locator(".mentra-header .mentra-name")).to_have_text("/root/research")
    items = preview.locator(".mentra-transcript .mentra-item")
    expect(items).to_have_count(2)  # the latest turn only
    expect(items.nth(0)).to_have_text("One more fact.")
    expect(items.nth(1)).to_have_text("Hermit crabs swap shells.")
    preview.locator("button.mentra-older").click()
    expect(items).to_have_count(4)  # the older turn, prepended
    expect(items.nth(0)).to_have_text("Do research.")
    expect(items.nth(1)).to_have_text("Sea stars regrow arms.")
    expect(items.nth(2)).to_have_text("One more fact.")
    expect(preview.locator("button.mentra-older")).to_have_count(0)


CAREFUL_TEAM = '''
from mentra_nb import tool
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

dropped = []

@tool(requires_approval=True)
def drop_rows(table: str) -> str:
    """Delete the old rows of a table."""
    dropped.append(table)
    return f"dropped {table}"

nb.session().register_tool(drop_rows)
nb.session().runtime.providers.register(ScriptedProvider("bob_model", [
    tool_use_stream("d1", "drop_rows", '{"table": "events"}'),
    text_stream("Cleaned."),
]))
nb.session().runtime.providers.register(ScriptedProvider("lead_model", []))
'''


def test_a_teammates_tool_call_is_approved_from_the_team_view(notebook):
    nb = notebook.open([
        SETUP,
        CAREFUL_TEAM,
        "lead = %mentra spawn lead --model lead_model:scripted --team\n%mentra team lead",
        "%mentra teammate lead bob --role cleaner --model bob_model:scripted --prompt 'Clean up.'",
    ])
    nb.run_all(4)
    team = nb.output(2).locator(".mentra-team")
    bob = team.locator('li[data-name="bob"]')
    expect(bob.locator(".mentra-badge")).to_have_text("waiting for approval: drop_rows")
    box = nb.output(3).locator(".mentra-team .mentra-approval")  # in the newest view of the team
    expect(box.locator(".mentra-name")).to_have_text("bob wants to run drop_rows")
    expect(team.locator(".mentra-approval")).to_have_count(0)
    expect(box.locator("pre")).to_contain_text('"table": "events"')
    box.locator("button.mentra-approve").click()
    expect(box).to_have_count(0)
    expect(bob.locator(".mentra-badge")).to_have_text("idle")
    assert nb.kernel.value("dropped") == ["events"]


WRITING_CHILD = '''
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream

lead_model = ScriptedProvider("lead_model", [
    tool_use_stream("s1", "spawn_agent",
                    '{"task_name": "writer", "message": "Write notes.txt.", "model": "writer_model:s"}'),
    tool_use_stream("w1", "wait_agent", '{"timeout_ms": 120000}'),
    tool_use_stream("w2", "wait_agent", '{"timeout_ms": 120000}'),
    text_stream("The writer is done."),
])
nb.session().runtime.providers.register(lead_model)
from mentra_nb.testing import controlled_stream
held, control = controlled_stream()
nb.session().runtime.providers.register(ScriptedProvider("writer_model", [held, text_stream("Wrote notes.txt.")]))

def release_writer():
    """The writer's model asks to write, once the test says so."""
    for event in tool_use_stream("c1", "write_file", '{"path": "notes.txt", "content": "tide pools"}').events:
        on_loop(lambda event=event: control.send(event))
'''


def test_a_subagents_write_waits_for_approval_in_the_picker_and_the_root_gets_its_result(notebook):
    """Issue 16.1: the child no longer hangs unseen in executing_tool."""
    nb = notebook.open([
        SETUP,
        WRITING_CHILD,
        "lead = %mentra spawn lead --model lead_model:scripted --subagents\n%mentra subagents lead",
        "turn = %mentra send lead Get the notes written.",
    ])
    nb.run_all(4)
    # The writer asks once the root waits for it (as a slower model would).
    poll(lambda: nb.kernel.value("len(lead_model.requests)") >= 2, message="the root's second step")
    nb.kernel.run("release_writer()")
    picker = nb.output(2).locator(".mentra-picker")
    writer = picker.locator('li[data-path="/root/writer"]')
    expect(writer.locator(".mentra-badge")).to_have_text("waiting for approval: write_file")
    box = picker.locator(".mentra-approval")
    expect(box.locator(".mentra-name")).to_have_text("writer wants to run write_file")
    expect(box.locator("pre")).to_contain_text('"content": "tide pools"')
    # The root heard of it: its first wait_agent returned for the paused child.
    poll(lambda: nb.kernel.value("len(lead_model.requests)") >= 3, message="the root's wait_agent")
    assert nb.kernel.value("not turn.done()")
    assert not nb.kernel.value("__import__('pathlib').Path('notes.txt').exists()")

    box.locator("button.mentra-approve").click()
    expect(box).to_have_count(0)
    expect(writer.locator(".mentra-badge")).to_have_text("completed")
    poll(lambda: nb.kernel.value("turn.done()"), message="the root's run")
    assert nb.kernel.value("turn.text") == "The writer is done."
    # The root's second wait_agent returned the child's result, delivered as its update.
    assert nb.kernel.value("[r.content for m in lead_model.requests[3].messages for r in m.tool_results]"
                           "[-1]") == '["/root/writer"]'
    assert nb.kernel.value("any('status=\"completed\">Wrote notes.txt.' in m.text "
                           "for m in lead_model.requests[3].messages)")
    assert nb.kernel.value("__import__('pathlib').Path('notes.txt').read_text()") == "tide pools"
