"""The cell tools over the `NotebookWorkspace` protocol (runtime/cell_tools), without a
browser: a notebook kept in a list implements the protocol, so the rules of the
tools (refusals, approvals, records, bounds, when they are offered) are pinned
here; tests/browser/test_cells.py runs the same tools against JupyterLab 4 and
Notebook 7."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from mentra_nb import AgentConfig, Runtime, SqliteStore
from mentra_nb.runtime.cell_tools import (
    CellImage,
    CellKind,
    CellMark,
    CellOutput,
    CellRun,
    NotebookCell,
    WorkspaceUnavailable,
    load_cell_changes,
)
from mentra_nb.testing import ScriptedProvider, text_stream, tool_use_stream
from tests.conftest import wait_until

# A 1x1 PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


class ListNotebook:
    """A NotebookWorkspace whose cells are a list; `run` "executes" by looking the
    source up in `outputs`."""

    def __init__(self, *sources: str) -> None:
        self.list = [NotebookCell(id=f"u{i}", kind="code", source=s) for i, s in enumerate(sources)]
        self.reason: str | None = None
        self.blocked: str | None = None
        self.outputs: dict[str, list[CellOutput]] = {}
        self.runs: list[str] = []
        self._ids = itertools.count(1)
        self._count = itertools.count(1)

    def unavailable(self) -> str | None:
        return self.reason

    def run_blocked(self) -> str | None:
        return self.blocked

    def _index(self, cell_id: str) -> int:
        for i, cell in enumerate(self.list):
            if cell.id == cell_id:
                return i
        raise WorkspaceUnavailable(f"no cell {cell_id}")

    async def cells(self) -> list[NotebookCell]:
        return list(self.list)

    async def insert(self, after: str | None, source: str, kind: CellKind, mark: CellMark) -> NotebookCell:
        cell = NotebookCell(id=f"a{next(self._ids)}", kind=kind, source=source, mark=mark)
        self.list.insert(len(self.list) if after is None else self._index(after) + 1, cell)
        return cell

    async def replace_source(self, cell_id: str, source: str, mark: CellMark) -> NotebookCell:
        i = self._index(cell_id)
        self.list[i] = self.list[i].model_copy(update={"source": source, "mark": mark})
        return self.list[i]

    async def delete(self, cell_id: str) -> NotebookCell:
        return self.list.pop(self._index(cell_id))

    async def run(self, cell_id: str, mark: CellMark) -> CellRun:
        i = self._index(cell_id)
        self.runs.append(cell_id)
        outputs = self.outputs.get(self.list[i].source, [])
        self.list[i] = self.list[i].model_copy(update={"execution_count": next(self._count), "outputs": outputs,
                                                       "mark": mark})
        failed = any(o.kind == "error" for o in outputs)
        return CellRun(status="error" if failed else "ok", cell=self.list[i])


@pytest.fixture
async def make(db_path):
    runtimes: list[Runtime] = []

    def build(notebook: ListNotebook, *scripts, config=None, model="scripted:m", name="writer"):
        provider = ScriptedProvider("scripted", list(scripts))
        rt = Runtime.empty(store=SqliteStore(db_path), providers=[provider], runtime_id="cells", notebook=notebook)
        runtimes.append(rt)
        return rt.spawn(name, model, config=config), provider, rt

    yield build
    for rt in runtimes:
        await rt.aclose()


def results(provider: ScriptedProvider):
    return [b for r in provider.requests for b in r.messages[-1].content if b.type == "tool_result"]


def call(tool_name: str, input_json: str, call_id: str = "c1"):
    return tool_use_stream(call_id, tool_name, input_json)


async def test_read_notebook_shows_ids_kinds_counts_outputs_and_which_cells_show_images(make):
    notebook = ListNotebook("print('hi')", "plot()")
    notebook.list[0] = notebook.list[0].model_copy(update={
        "execution_count": 3, "outputs": [CellOutput(kind="stream", text="hi\n")]})
    notebook.list[1] = notebook.list[1].model_copy(update={
        "outputs": [CellOutput(kind="display", text="<Figure>", images=[CellImage(mime="image/png")])]})
    agent, provider, _rt = make(notebook, call("read_notebook", "{}"), text_stream("ok"))
    await agent.send("read it")
    [read] = results(provider)
    assert "[1] cell u0 · code · In [3]" in read.content and "hi" in read.content
    assert "[2] cell u1 · code · not run" in read.content and "[shows an image: image/png]" in read.content


async def test_a_long_cell_and_many_cells_are_bounded(make):
    notebook = ListNotebook(*(f"x{i} = {i}" for i in range(120)))
    notebook.list[0] = notebook.list[0].model_copy(update={"source": "y" * 50_000})
    agent, provider, _rt = make(notebook, call("read_notebook", '{"start": 1}'), text_stream("ok"))
    await agent.send("read it")
    [read] = results(provider)
    assert "notebook: 120 cells; showing 1-50 (read_notebook start=51 for more)" in read.content
    assert "more characters]" in read.content and len(read.content) < 70_000


async def test_insert_records_the_change_and_marks_the_cell(make, db_path):
    notebook = ListNotebook("x = 1")
    agent, provider, _rt = make(notebook, call("insert_cell", '{"source": "# Notes", "kind": "markdown", "after": "u0"}'),
                               text_stream("ok"))
    await agent.send("add a note")
    [result] = results(provider)
    assert result.content == "inserted markdown cell a1 at position 2"
    assert notebook.list[1].mark == CellMark(agent="writer", run=1)
    [change] = load_cell_changes(SqliteStore(db_path), agent.id)
    assert (change.cell_id, change.tool, change.before, change.after.source, change.after.kind) == \
        ("a1", "insert_cell", None, "# Notes", "markdown")
    assert (change.agent, change.run_generation, change.message_index) == ("writer", 1, 2)


async def test_editing_the_users_cell_asks_with_the_diff_and_is_recorded_with_before_and_after(make, db_path):
    notebook = ListNotebook("x = 1\nprint(x)")
    agent, provider, _rt = make(notebook, call("edit_cell", '{"cell": "u0", "old": "x = 1", "new": "x = 2"}'),
                                text_stream("ok"))
    task = asyncio.ensure_future(agent.send("edit"))
    await wait_until(lambda: agent.snapshot.pending_approvals)
    [pending] = agent.snapshot.pending_approvals
    assert pending.tool_name == "edit_cell"
    assert "-x = 1\n+x = 2\n" in pending.input["diff"]
    assert notebook.list[0].source == "x = 1\nprint(x)"  # not before the yes
    agent.approve(pending.reference)
    await task
    assert notebook.list[0].source == "x = 2\nprint(x)"
    [change] = load_cell_changes(SqliteStore(db_path), agent.id)
    assert (change.before.source, change.after.source) == ("x = 1\nprint(x)", "x = 2\nprint(x)")
    assert "edited cell u0" in results(provider)[0].content


async def test_the_agent_edits_its_own_cell_without_asking_unless_configured(make):
    notebook = ListNotebook()
    scripts = [call("insert_cell", '{"source": "a = 1"}'), call("edit_cell", '{"cell": "a1", "old": "1", "new": "2"}', "c2"),
               text_stream("ok")]
    agent, _provider, _rt = make(notebook, *scripts)
    await agent.send("go")
    assert notebook.list[0].source == "a = 2"

    asking = ListNotebook()
    agent2, _p, _rt = make(asking, *scripts, config=AgentConfig(ask_to_edit_own_cells=True), name="careful")
    task = asyncio.ensure_future(agent2.send("go"))
    await wait_until(lambda: agent2.snapshot.pending_approvals)
    agent2.deny(agent2.snapshot.pending_approvals[0].reference, "leave it")
    await task
    assert asking.list[0].source == "a = 1"


@pytest.mark.parametrize(("old", "refusal"), [
    ("z = 9", "old was not found in cell u0"),
    ("x", "old matches 2 times in cell u0 (lines 1, 2), so the edit is ambiguous"),
])
async def test_an_edit_that_matches_none_or_several_is_refused_like_edit_file(make, old, refusal):
    notebook = ListNotebook("x = 1\nx += 1")
    agent, provider, _rt = make(notebook, call("edit_cell", f'{{"cell": "u0", "old": "{old}", "new": "y"}}'),
                                text_stream("ok"))
    await agent.send("edit")
    [result] = results(provider)
    assert result.is_error and refusal in result.content
    assert not agent.snapshot.pending_approvals and notebook.list[0].source == "x = 1\nx += 1"


async def test_run_cell_returns_outputs_and_images_after_approval_and_auto_approve_skips_asking(make):
    notebook = ListNotebook("plot()")
    notebook.outputs["plot()"] = [CellOutput(kind="stream", text="drawing\n"),
                                  CellOutput(kind="display", images=[CellImage(mime="image/png", data=PNG)])]
    agent, provider, _rt = make(notebook, call("run_cell", '{"cell": "u0"}'), text_stream("ok"),
                                config=AgentConfig(auto_approve=["run_cell"]))
    await agent.send("run it")
    [result] = results(provider)
    assert result.content.startswith("cell u0 ran (In [1])") and "drawing" in result.content
    assert len(result.images) == 1 and result.images[0].media_type == "image/png"
    assert notebook.runs == ["u0"]


async def test_run_cell_asks_showing_the_code_and_an_error_goes_back_as_an_error(make):
    notebook = ListNotebook("1/0")
    notebook.outputs["1/0"] = [CellOutput(kind="error", text="ZeroDivisionError: division by zero")]
    agent, provider, _rt = make(notebook, call("run_cell", '{"cell": "u0"}'), text_stream("ok"))
    task = asyncio.ensure_future(agent.send("run it"))
    await wait_until(lambda: agent.snapshot.pending_approvals)
    [pending] = agent.snapshot.pending_approvals
    assert pending.input == {"cell": "u0", "code": "1/0"}
    agent.approve(pending.reference)
    await task
    [result] = results(provider)
    assert result.is_error and "ZeroDivisionError: division by zero" in result.content


async def test_a_run_that_could_not_start_before_the_turn_ends_is_refused_at_once(make):
    notebook = ListNotebook("x")
    notebook.blocked = "a cell is waiting for this turn"
    agent, provider, _rt = make(notebook, call("run_cell", '{"cell": "u0"}'), text_stream("ok"))
    await agent.send("run it")  # no approval asked: it would not help
    [result] = results(provider)
    assert result.is_error and result.content == "a cell is waiting for this turn" and not notebook.runs


async def test_delete_asks_and_records_the_cell_it_removed(make, db_path):
    notebook = ListNotebook("keep", "drop me")
    agent, _provider, _rt = make(notebook, call("delete_cell", '{"cell": "u1"}'), text_stream("ok"))
    task = asyncio.ensure_future(agent.send("delete"))
    await wait_until(lambda: agent.snapshot.pending_approvals)
    agent.approve(agent.snapshot.pending_approvals[0].reference)
    await task
    assert [c.source for c in notebook.list] == ["keep"]
    [change] = load_cell_changes(SqliteStore(db_path), agent.id)
    assert change.before.source == "drop me" and change.after is None


async def test_the_record_survives_a_new_runtime_on_the_same_file(make, db_path):
    notebook = ListNotebook()
    agent, _provider, rt = make(notebook, call("insert_cell", '{"source": "a"}'),
                                call("insert_cell", '{"source": "b"}', "c2"), text_stream("ok"))
    await agent.send("two cells")
    agent_id = agent.id
    await rt.aclose()
    reopened = SqliteStore(db_path)
    assert [c.after.source for c in load_cell_changes(reopened, agent_id)] == ["a", "b"]


async def test_the_tools_are_offered_only_where_cells_can_be_edited_and_the_agent_wants_them(make):
    notebook = ListNotebook()
    notebook.reason = "no page"
    agent, provider, _rt = make(notebook, text_stream("a"), text_stream("b"), text_stream("c"))
    await agent.send("1")
    notebook.reason = None
    await agent.send("2")
    offered = [{t.name for t in r.tools} for r in provider.requests]
    assert "read_notebook" not in offered[0] and {"read_notebook", "run_cell"} <= offered[1]
    agent.configure(cells=False)
    await agent.send("3")
    assert "read_notebook" not in {t.name for t in provider.requests[2].tools}


async def test_the_offline_test_model_gets_no_cell_tools_unless_asked(make):
    quiet, _p, _rt = make(ListNotebook(), model="test:default")
    assert not any(t.spec.name == "read_notebook" for t in quiet.tools())
