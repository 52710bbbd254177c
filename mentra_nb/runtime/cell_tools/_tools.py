"""The cell tools and the extension that offers them.

`CellsExtension` gives each agent whose `AgentConfig(cells=...)` allows it
(None, the default: every model but the offline `test` one, which calls every
tool it is offered) the tools `read_notebook`, `insert_cell`, `edit_cell`,
`run_cell` and `delete_cell`, but only while the runtime has a notebook
(`Runtime(notebook=workspace)`) whose `unavailable()` is None: where no front end
can edit cells, the model is not offered them at all.

Approvals: `run_cell` and `delete_cell` always ask (showing the code, or the cell)
unless `AgentConfig.auto_approve` names them; `edit_cell` asks for a cell the
agent did not insert itself, showing the diff (with
`AgentConfig(ask_to_edit_own_cells=True)`, for its own cells too). They ask from inside
the tool (`ask_approval`), so the question shows what the call would do, not only
the model's input.

Every change is recorded (`_changes.py`) with the cell before and after, and
the cell is marked with the agent's name and run.
"""

from __future__ import annotations

import difflib
import fnmatch
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from mentra_nb.errors import ConfigError
from mentra_nb.messages import ImageBlock
from mentra_nb.providers.test import TestProvider
from mentra_nb.runtime._approvals import denial_result
from mentra_nb.runtime._extensions import AgentExtension, ExtensionFields, RuntimeExtension
from mentra_nb.runtime._file_tools import WorkspaceRefusal, exact_replacement
from mentra_nb.runtime._services import AgentHandle, HasServices
from mentra_nb.runtime.cell_tools._changes import (
    CellChange,
    CellSide,
    load_cell_changes,
    record_cell_change,
)
from mentra_nb.runtime.cell_tools._workspace import (
    CellMark,
    CellOutput,
    CellRun,
    NotebookCell,
    NotebookWorkspace,
    WorkspaceUnavailable,
)
from mentra_nb.runtime.images import MAX_IMAGES, bound_image
from mentra_nb.runtime.tools import Tool, ToolDurability, ToolOutput, tool

__all__ = ["CELL_TOOL_NAMES", "CellsConfig", "CellsExtension", "cells_enabled", "describe_run", "render_cells"]

CELL_TOOL_NAMES = ("read_notebook", "insert_cell", "edit_cell", "run_cell", "delete_cell")
"""The tools this extension offers an agent, where a notebook's cells can be edited."""
MAX_CELLS_PER_READ = 50
MAX_SOURCE_CHARS = 6_000  # of one cell, as read_notebook shows it
MAX_OUTPUT_CHARS = 2_000  # of one cell's outputs, as read_notebook shows them
MAX_RUN_OUTPUT_CHARS = 20_000  # of a run's outputs, as run_cell returns them
MAX_READ_CHARS = 60_000  # of one read_notebook answer
RUN_TIMEOUT = 3_600.0  # a cell may compute for long; interrupting the kernel ends it sooner


class CellsConfig(ExtensionFields):
    """The fields this extension adds to `AgentConfig`."""

    # None offers the cell tools to every model but the offline test model (which
    # calls every tool it is offered); True or False decides.
    cells: bool | None = None
    # Whether editing a cell the agent inserted itself asks too (a cell the user
    # wrote always asks).
    ask_to_edit_own_cells: bool = False


def cells_enabled(agent: AgentHandle) -> bool:
    """Whether `agent` is to get the cell tools: `AgentConfig(cells=...)`, and when
    that is None, every model but the offline test model."""
    chosen = CellsConfig.of(agent.config).cells
    if chosen is not None:
        return chosen
    try:
        provider, _info = agent.services.providers.resolve(agent.model.key)
    except Exception:  # a model whose provider is gone: it makes no calls anyway
        return False
    return not isinstance(provider, TestProvider)


def _use_notebook(runtime: HasServices, workspace: NotebookWorkspace) -> None:
    """`Runtime(notebook=workspace)`: the notebook its agents' cell tools work in."""
    extension = runtime.services.extension(CellsExtension)
    if extension is None:
        raise ConfigError("Runtime(notebook=...) needs the cells extension; build the runtime with "
                          "default_extensions() (or add CellsExtension() to its extensions)")
    extension.use(workspace)


class CellsExtension(RuntimeExtension):
    """Offers the cell tools over the runtime's notebook (see the module). It adds
    `AgentConfig(cells=..., ask_to_edit_own_cells=...)` and `Runtime(notebook=...)`."""

    config = CellsConfig
    runtime_options: ClassVar[dict[str, Any]] = {"notebook": _use_notebook}

    def __init__(self, workspace: NotebookWorkspace | None = None) -> None:
        self._workspace = workspace

    def use(self, workspace: NotebookWorkspace) -> None:
        """Work in `workspace` from now on (agents attached already included)."""
        self._workspace = workspace

    @property
    def workspace(self) -> NotebookWorkspace | None:
        return self._workspace

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        return _AgentCells(agent, self)

    def tool_names(self) -> tuple[str, ...]:
        return CELL_TOOL_NAMES


class _AgentCells(AgentExtension):
    def __init__(self, agent: AgentHandle, extension: CellsExtension) -> None:
        self._agent = agent
        self._extension = extension
        self._tools: list[Tool] = []
        self._built_for: NotebookWorkspace | None = None

    def tools(self) -> list[Tool]:
        workspace = self._extension.workspace
        if workspace is None or workspace.unavailable() is not None or not cells_enabled(self._agent):
            return []
        if workspace is not self._built_for:
            self._tools, self._built_for = _cell_tools(self._agent, workspace), workspace
        return list(self._tools)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n… [{len(text) - limit} more characters]"


def _output_text(outputs: list[CellOutput], limit: int) -> str:
    parts = []
    for output in outputs:
        text = output.text.rstrip("\n")
        if output.kind == "error":
            text = f"error: {text}"
        elif output.kind == "result":
            text = f"result: {text}"
        images = ", ".join(image.mime for image in output.images)
        if images:
            text = f"{text}\n[shows an image: {images}]" if text else f"[shows an image: {images}]"
        if text:
            parts.append(text)
    return _clip("\n".join(parts), limit)


def _header(position: int, cell: NotebookCell) -> str:
    parts = [f"[{position}] cell {cell.id} · {cell.kind}"]
    if cell.kind == "code":
        parts.append(f"In [{cell.execution_count}]" if cell.execution_count is not None else "not run")
    if cell.mark is not None:
        parts.append(f"last changed by agent {cell.mark.agent} (run {cell.mark.run})")
    return " · ".join(parts)


def render_cells(cells: list[NotebookCell], start: int | None, end: int | None) -> str:
    """read_notebook's answer: cells `start`..`end` (positions from 1), bounded."""
    if not cells:
        return "the notebook has no cells"
    first = max(1, start or 1)
    last = min(len(cells), end or len(cells), first + MAX_CELLS_PER_READ - 1)
    if first > len(cells):
        return f"the notebook has {len(cells)} cells; start={first} is past the last one"
    lines = [f"notebook: {len(cells)} cells; showing {first}-{last}"
             + (f" (read_notebook start={last + 1} for more)" if last < len(cells) else "")]
    used = 0
    for position in range(first, last + 1):
        cell = cells[position - 1]
        block = [_header(position, cell), _clip(cell.source, MAX_SOURCE_CHARS) or "(empty)"]
        outputs = _output_text(cell.outputs, MAX_OUTPUT_CHARS)
        if outputs:
            block.append(f"--- output\n{outputs}")
        text = "\n".join(block)
        if used + len(text) > MAX_READ_CHARS:
            lines.append(f"[cut here at {MAX_READ_CHARS} characters; read_notebook start={position} for more]")
            break
        lines.append(text)
        used += len(text)
    return "\n\n".join(lines)


def describe_run(run: CellRun) -> ToolOutput:
    """run_cell's result: status, execution count, outputs (bounded), images as image blocks."""
    cell = run.cell
    count = f"In [{cell.execution_count}]" if cell.execution_count is not None else "no execution count"
    status = {"ok": "ran", "error": "ran and raised an error", "aborted": "did not run (aborted)"}[run.status]
    parts = [f"cell {cell.id} {status} ({count})"]
    text = _output_text(cell.outputs, MAX_RUN_OUTPUT_CHARS)
    parts.append(f"output:\n{text}" if text else "no output")
    images: list[ImageBlock] = []
    for image in (i for o in cell.outputs for i in o.images):
        if image.data is None or not image.mime.startswith("image/") or image.mime == "image/svg+xml":
            continue
        if len(images) == MAX_IMAGES:
            parts.append(f"[more images than the {MAX_IMAGES} a result holds; the first {MAX_IMAGES} are attached]")
            break
        bounded = bound_image(image.mime, image.data)
        if bounded.image is not None:
            images.append(bounded.image)
        if bounded.note:
            parts.append(f"[an image {bounded.note}]")
    return ToolOutput(content="\n".join(parts), is_error=run.status != "ok", images=images)


def _diff(before: str, after: str, cell_id: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 f"cell {cell_id}", f"cell {cell_id} (edited)", n=2)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _cell_tools(agent: AgentHandle, workspace: NotebookWorkspace) -> list[Tool]:
    """The cell tools of `agent` (closures: each knows its agent, for marks and records)."""

    def mark() -> CellMark:
        return CellMark(agent=agent.name, run=agent.state.run_generation)

    def record(name: str, cell_id: str, before: CellSide | None, after: CellSide | None,
               previous: str | None = None) -> None:
        services = agent.services
        change = CellChange(cell_id=cell_id, tool=name, before=before, after=after, agent=agent.name,
                            run_generation=agent.state.run_generation, message_index=agent.state.history_len,
                            previous=previous)
        record_cell_change(services.store, agent.id, change, token=services.token)

    def inserted_by_agent(cell_id: str) -> bool:
        return any(c.cell_id == cell_id and c.before is None
                   for c in load_cell_changes(agent.services.store, agent.id))

    async def find(cell_id: str) -> tuple[int, NotebookCell]:
        cells = await workspace.cells()
        for position, cell in enumerate(cells, start=1):
            if cell.id == cell_id:
                return position, cell
        raise WorkspaceRefusal(f"there is no cell {cell_id!r} in the notebook (the user may have deleted it); "
                               "read_notebook shows the cells and their ids")

    def auto_approved(name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in agent.config.auto_approve)

    async def approved(name: str, details: dict[str, object]) -> str | None:
        """None when the user approved (or `auto_approve` names the tool), else the
        error result for the model."""
        if auto_approved(name):
            return None
        decision = await agent.ask_approval(name, details)
        return None if decision.approved else denial_result(name, decision.reason)

    @tool(read_only=True)
    async def read_notebook(
        start: Annotated[int | None, Field(ge=1, description="First cell position, from 1 (default 1)")] = None,
        end: Annotated[int | None, Field(ge=1, description="Last cell position (default: the last cell)")] = None,
    ) -> str | ToolOutput:
        """Read the notebook as the user sees it now (unsaved edits included): each cell's id,
        kind, execution count, source and outputs (text, errors, which cells show images).
        At most 50 cells per call."""
        try:
            return render_cells(await workspace.cells(), start, end)
        except WorkspaceUnavailable as err:
            return ToolOutput(content=str(err), is_error=True)

    @tool(durability=ToolDurability.NOT_REPLAYABLE)
    async def insert_cell(
        source: Annotated[str, Field(description="The new cell's text")],
        kind: Annotated[Literal["code", "markdown"], Field(description="code or markdown")] = "code",
        after: Annotated[str | None, Field(description="Id of the cell to insert after (default: at the end)")] = None,
    ) -> str | ToolOutput:
        """Insert a new cell into the notebook (it is not run; run_cell runs it). Returns its id."""
        try:
            if after is not None:
                await find(after)
            cell = await workspace.insert(after, source, kind, mark())
            record("insert_cell", cell.id, None, CellSide(source=cell.source, kind=cell.kind))
            position, _ = await find(cell.id)
        except (WorkspaceUnavailable, WorkspaceRefusal) as err:
            return ToolOutput(content=str(err), is_error=True)
        return f"inserted {kind} cell {cell.id} at position {position}"

    @tool(durability=ToolDurability.NOT_REPLAYABLE)
    async def edit_cell(
        cell: Annotated[str, Field(description="The cell's id (read_notebook shows them)")],
        old: Annotated[str, Field(description="Exact text of the cell to replace (whitespace matters)")],
        new: Annotated[str, Field(description="Text to put in its place")],
    ) -> str | ToolOutput:
        """Replace exact text in a cell; `old` must match exactly once. Editing a cell you did not
        insert asks the user first."""
        try:
            if not old:
                raise WorkspaceRefusal("old is empty; copy the text to replace from read_notebook")
            if old == new:
                raise WorkspaceRefusal("old and new are the same text, so there is nothing to change")
            _position, current = await find(cell)
            updated, _count, line = exact_replacement(current.source, old, new, where=f"cell {cell}",
                                                      reader="read_notebook", offers_replace_all=False)
            if CellsConfig.of(agent.config).ask_to_edit_own_cells or not inserted_by_agent(cell):
                refusal = await approved("edit_cell", {"cell": cell, "diff": _diff(current.source, updated, cell)})
                if refusal is not None:
                    return ToolOutput(content=refusal, is_error=True)
                _position, current = await find(cell)  # the user may have typed meanwhile
                updated, _count, line = exact_replacement(current.source, old, new, where=f"cell {cell}",
                                                          reader="read_notebook", offers_replace_all=False)
            changed = await workspace.replace_source(cell, updated, mark())
            record("edit_cell", cell, CellSide(source=current.source, kind=current.kind),
                   CellSide(source=changed.source, kind=changed.kind))
        except (WorkspaceUnavailable, WorkspaceRefusal) as err:
            return ToolOutput(content=str(err), is_error=True)
        return f"edited cell {cell} (from line {line}); it was not run (run_cell runs it)"

    @tool(durability=ToolDurability.NOT_REPLAYABLE, timeout=RUN_TIMEOUT)
    async def run_cell(
        cell: Annotated[str, Field(description="The code cell's id (read_notebook shows them)")],
    ) -> ToolOutput:
        """Run a code cell as the user's Shift-Enter does (it gets its In [n] and its outputs stay in
        the notebook); waits for it and returns its outputs, images included. Asks the user first."""
        try:
            blocked = workspace.run_blocked()
            if blocked is not None:
                raise WorkspaceRefusal(blocked)
            # Asking shows the code, read first; an allowed run goes straight to the page,
            # which refuses a cell that is gone or not code (one round trip, not two).
            if not auto_approved("run_cell"):
                _position, current = await find(cell)
                if current.kind != "code":
                    raise WorkspaceRefusal(f"cell {cell} is a {current.kind} cell; only code cells run")
                refusal = await approved("run_cell", {"cell": cell, "code": current.source})
                if refusal is not None:
                    return ToolOutput(content=refusal, is_error=True)
                blocked = workspace.run_blocked()  # a cell may have started waiting meanwhile
                if blocked is not None:
                    raise WorkspaceRefusal(blocked)
            return describe_run(await workspace.run(cell, mark()))
        except (WorkspaceUnavailable, WorkspaceRefusal) as err:
            return ToolOutput(content=str(err), is_error=True)

    @tool(durability=ToolDurability.NOT_REPLAYABLE)
    async def delete_cell(
        cell: Annotated[str, Field(description="The cell's id (read_notebook shows them)")],
    ) -> str | ToolOutput:
        """Delete a cell from the notebook. Asks the user first."""
        try:
            _position, current = await find(cell)
            refusal = await approved("delete_cell", {"cell": cell, "kind": current.kind, "source": current.source})
            if refusal is not None:
                return ToolOutput(content=refusal, is_error=True)
            # The cell above it now (the user may have moved cells meanwhile): undo puts it back there.
            ids = [c.id for c in await workspace.cells()]
            previous = ids[ids.index(cell) - 1] if cell in ids and ids.index(cell) > 0 else None
            gone = await workspace.delete(cell)
            record("delete_cell", cell, CellSide(source=gone.source, kind=gone.kind), None, previous)
        except (WorkspaceUnavailable, WorkspaceRefusal) as err:
            return ToolOutput(content=str(err), is_error=True)
        return f"deleted cell {cell}"

    return [read_notebook, insert_cell, edit_cell, run_cell, delete_cell]

